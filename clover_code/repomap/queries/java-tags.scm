; Added to the grammar wheel's tags.scm.

(enum_declaration
  name: (identifier) @name) @definition.type

(record_declaration
  name: (identifier) @name) @definition.class

(field_declaration
  type: (type_identifier) @name) @reference.type
