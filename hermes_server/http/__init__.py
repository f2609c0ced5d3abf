"""The HTTP edge: envelopes, auth, body limits, framework responses. Nothing about sessions."""
