"""From LaTeX to a record skeleton (placeholder)."""
