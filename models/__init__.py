"""The manifest of known embedding models (`manifest.json`), shipped as package data."""
