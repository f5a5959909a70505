; tree-sitter-bash ships no tags.scm: functions are the definitions, the
; commands that call them the references.

(function_definition
  name: (word) @name) @definition.function

(command
  name: (command_name (word) @name)) @reference.call
