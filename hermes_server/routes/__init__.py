"""Thin handlers: parse → domain → store → response. Errors are raised, never rendered here."""
