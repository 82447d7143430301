"""The ensemble as one OpenAI-compatible model: the server and the request fields it honours."""
