"""API tokens from the browser and the API: every signed-in user lists, creates and revokes their own tokens;
an owner also manages the ingest tokens of the projects they own. The verbs are annotator.services.api_tokens;
who may see and revoke which token is annotator.access.access_tokens."""
