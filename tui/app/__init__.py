"""The Textual app. Widgets render what tui/core computes; nothing here decides a diagnosis."""
