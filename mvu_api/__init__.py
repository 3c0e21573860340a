"""Transports over mvu_store: the `mvu` command line (and, later, HTTP)."""
