; Added to the wheel's TypeScript tags.scm, which only covers what TypeScript
; adds to JavaScript (the JavaScript wheel's tags.scm is used as well).

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.type

(generic_type
  name: (type_identifier) @name) @reference.type

(extends_clause
  value: (identifier) @name) @reference.class

(implements_clause
  (type_identifier) @name) @reference.implementation
