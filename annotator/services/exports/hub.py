"""Push an export folder to a Hugging Face Hub dataset repo, and say in plain words why it failed.

Why messages of our own: huggingface_hub's errors carry request ids, URLs and server prose; an owner
needs to know what to do (a token that is wrong, one that may not write there, a name that is taken, no
network). The token is an argument, used for these calls only, and scrubbed from any message we keep.

One export is one commit: huggingface_hub's hf_xet pipeline (used by `upload_folder` when hf_xet is
installed, and `datasets` installs it) may split a folder into several commits; settings turn it off
with HF_HUB_DISABLE_XET, and :func:`_single_commit` makes sure of it when the library was imported
before the settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_CONNECTION_ERRORS = (
    "ConnectError",
    "ConnectionError",
    "ConnectTimeout",
    "TransportError",
    "Timeout",
    "ProxyError",
)


class HubError(Exception):
    """A push that failed, with the message to show (never containing the token)."""

    def __init__(self, message: str, *, status: int | None = None):
        self.message, self.status = message, status
        super().__init__(message)


@dataclass(frozen=True)
class PushResult:
    repo_url: str
    commit_url: str
    commit_oid: str


def push_folder(
    folder: Path,
    repo_id: str,
    *,
    token: str,
    endpoint: str,
    private: bool = True,
    commit_message: str = "",
) -> PushResult:
    """Create the dataset repo when missing (an existing one is kept) and commit the folder to it."""
    from huggingface_hub import HfApi

    _single_commit()
    api = HfApi(endpoint=endpoint, token=token, library_name="trace-annotator")
    stage = "create"
    try:
        repo_url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        stage = "upload"
        info = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(folder),
            commit_message=commit_message or "Publish labelled traces with trace-annotator",
        )
    except Exception as error:
        raise _plain(error, repo_id=repo_id, endpoint=endpoint, stage=stage, token=token) from None
    return PushResult(repo_url=str(repo_url), commit_url=str(info.commit_url), commit_oid=str(info.oid))


def _single_commit() -> None:
    from huggingface_hub import constants

    constants.HF_HUB_DISABLE_XET = True


def _plain(error: Exception, *, repo_id: str, endpoint: str, stage: str, token: str) -> HubError:
    """Map huggingface_hub / HTTP-client exceptions to one sentence an owner can act on."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    namespace = repo_id.split("/")[0]
    if isinstance(error, HfHubHTTPError) and getattr(error, "response", None) is not None:
        status = getattr(error.response, "status_code", None)
        if status == 401:
            return HubError(
                "The Hugging Face token was rejected (401): it is invalid, expired or revoked. "
                "Create a token with write access at huggingface.co/settings/tokens.",
                status=status,
            )
        if status == 403 and stage == "create":
            return HubError(
                f"This token may not create repositories under {namespace!r} (403). Use a token with write "
                f"access to that user or organisation, or choose a repo id in your own namespace.",
                status=status,
            )
        if status == 403:
            return HubError(
                f"This token may not write to {repo_id!r} (403): the repository exists and belongs to someone "
                "else, or the token is read-only. Choose another repo id, or use a write token of its owner.",
                status=status,
            )
        if status == 409:
            return HubError(
                f"The repo id {repo_id!r} is taken (409): a repository of that name already exists and cannot be "
                "used for this dataset. Choose another repo id.",
                status=status,
            )
        if status == 404:
            return HubError(
                f"The Hub found no dataset repository {repo_id!r} (404), or the token cannot see it.",
                status=status,
            )
        return HubError(
            f"The Hugging Face Hub refused the upload ({status}): {_scrub(_first_line(error), token)}",
            status=status,
        )
    if isinstance(error, OfflineModeIsEnabled) or _is_connection_error(error):
        return HubError(
            f"Could not reach the Hugging Face Hub at {endpoint} ({_scrub(_first_line(error), token)}). "
            "Check the network connection (or HF_ENDPOINT) and try again."
        )
    return HubError(f"Publishing to {repo_id!r} failed: {_scrub(_first_line(error), token)}")


def _is_connection_error(error: BaseException) -> bool:
    """Connection failures from whichever HTTP client this huggingface_hub uses (requests, httpx, httpx2)."""
    seen: BaseException | None = error
    for _ in range(8):  # the cause chain, bounded (chains can loop)
        if seen is None:
            break
        if isinstance(seen, ConnectionError | TimeoutError):
            return True
        if any(cls.__name__ in _CONNECTION_ERRORS for cls in type(seen).__mro__):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "[token]") if token else text
