"""SillyTavern chats in and out (docs/sillytavern.md).

- :mod:`reader`: the chat file read line by line, every refusal naming its line;
"""
