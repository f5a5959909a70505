"""The Textual front end. Import ``clover_code.ui.run`` lazily: the core never loads Textual."""
