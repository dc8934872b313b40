"""The pitfall knowledge base: entries (kb/<category>/<id>.md), search, linking, lint, scaffolding."""
