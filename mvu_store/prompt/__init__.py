"""What a host puts into a model's prompt from a character's state.

``format_message_variable`` renders a value as the world-book macro
``{{format_message_variable::<path>}}`` does, and ``expand_message_variables`` expands those
macros in an entry's text. Both are pure: no service, no storage.
"""

from mvu_store.prompt.macro import expand_message_variables, format_message_variable, has_macro, macro_paths
from mvu_store.prompt.yaml_text import yaml_stringify

__all__ = ["expand_message_variables", "format_message_variable", "has_macro", "macro_paths", "yaml_stringify"]
