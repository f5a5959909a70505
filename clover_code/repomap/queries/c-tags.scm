; Added to the grammar wheel's tags.scm, which has definitions only.

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression field: (field_identifier) @name)) @reference.call

(type_identifier) @name @reference.type
