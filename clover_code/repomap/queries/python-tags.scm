; Added to the grammar wheel's own tags.scm: names used without a call
; (base classes, decorators, annotations, imports) also count as references.

(class_definition
  superclasses: (argument_list
    [(identifier) @name
     (attribute attribute: (identifier) @name)])) @reference.class

(decorator [(identifier) @name
            (attribute attribute: (identifier) @name)]) @reference.call

(type [(identifier) @name
       (attribute attribute: (identifier) @name)]) @reference.type

(import_from_statement
  name: (dotted_name (identifier) @name)) @reference.import

(import_from_statement
  name: (aliased_import name: (dotted_name (identifier) @name))) @reference.import
