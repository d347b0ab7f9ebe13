"""Turning solution sources into something a backend can call."""
