FROM python:3.12-slim
# DEBUG is off (the settings' default, stated here too): the container refuses to start without SECRET_KEY
# and FIELD_ENCRYPTION_KEY instead of serving debug pages with a public key.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VAR_DIR=/data STATIC_ROOT=/app/staticfiles DEBUG=false
WORKDIR /app
COPY pyproject.toml README.md ./
RUN pip install --no-cache-dir --upgrade pip && pip install --no-cache-dir .
COPY . .
RUN SECRET_KEY=build-only-collectstatic FIELD_ENCRYPTION_KEY=build-only-unused python manage.py collectstatic --noinput
RUN useradd --create-home annotator && mkdir -p /data && chown annotator /data
USER annotator
EXPOSE 8000
CMD ["gunicorn", "annotator.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
