"""Durable state in SQLite."""
