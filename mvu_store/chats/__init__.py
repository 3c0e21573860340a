"""SillyTavern chats in and out (docs/sillytavern.md).

- :mod:`reader`: the chat file read line by line, every refusal naming its line;
- :mod:`turns`: the messages as a host session's events;
- :mod:`states`: a recorded state as a version keeps it, and back;
- :mod:`verify`: a reply re-applied to the state before it, compared with the one after;
- :mod:`importer`: the file into the ledger in one unit of work;
- :mod:`exporter`: a session back as a chat file.
"""

from mvu_store.chats.exporter import export_chat
from mvu_store.chats.importer import ChatImport, Progress, import_chat

__all__ = ["ChatImport", "Progress", "export_chat", "import_chat"]
