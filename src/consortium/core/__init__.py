"""The small shared pieces every layer uses: plain types, errors, the answer convention, token
estimates, reproducible draws, the wire format, progress bars and the plug-in table."""
