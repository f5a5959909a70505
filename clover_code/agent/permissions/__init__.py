"""Who may run what: approval modes (``approval``), the config's allow and deny
rules combined with them (``policy``; the tables and which keys apply to a
tool in ``rule_tables``, path globs in ``path_rules``), the shell command check
(``shell/``), the prefix an "allow for this session" answer remembers
(``session_rule``) and the preview of an edit before it is allowed
(``edit_preview``).
"""
