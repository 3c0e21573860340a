"""The Ledger: the one public face of the store, composed of one repository per use case.

=================  ==========================================================================
``store.py``       the private store: engines, the writer, the session locks (``locks.py``),
                   the read and write boundaries (driver errors translated on both), and the
                   steps every unit of work is made of (blobs, rows and their bytes, append
                   positions, the budget)
``commits.py``     versions under row-version CAS, idempotency receipts, the management mode
``resources.py``   create, fork and lineage, heads, blobs, versions, checkpoints
``selections.py``  selections, activation boundaries, templates, legacy files
``instances.py``   a session's selection and its instances, each with its boundary
``seeds.py``       fork / swipe / retry tickets: capture and install
``fact_log.py``    the bounded facts store and the usage counters
``change_log.py``  each path's story, a version's and a turn's changes, the states a diff compares
``session_rows``   what a session's read needs, gathered in one round trip
``host_sessions``  the store-backed host's sessions and events (outside the budget)
``chat_rows.py``   a SillyTavern chat's import (one unit) and export (one snapshot)
``transfer_rows``  ``mvu import``'s rows (one unit) and the whole ledger (one snapshot)
``findings.py``    the file's structure, damaged rows, the audit views
=================  ==========================================================================

Each repository holds the one :class:`~mvu_store.ledger.store.Store` and the repositories it
builds on (a seed install forks and activates; a commit appends its facts), and offers its use
cases as async methods. Each method that writes is one unit of work: its steps run inside the
ledger (``Store.write``), so no transaction, cursor or row step ever leaves the package; reads
leave it as records. ``Ledger`` binds every repository's public methods as its own, so callers
keep one flat vocabulary (``ledger.commit``, ``ledger.head``, ...) whichever part answers.
"""

from __future__ import annotations

from typing import Self

from sqlalchemy import Engine

from mvu_store.ledger.change_log import ChangeLog
from mvu_store.ledger.chat_rows import ChatRows
from mvu_store.ledger.commits import Commits
from mvu_store.ledger.fact_log import FactLog
from mvu_store.ledger.findings import Findings
from mvu_store.ledger.host_sessions import HostSessions
from mvu_store.ledger.instances import Instances
from mvu_store.ledger.resources import Resources
from mvu_store.ledger.seeds import Seeds
from mvu_store.ledger.selections import Selections
from mvu_store.ledger.session_rows import Views
from mvu_store.ledger.store import Store
from mvu_store.ledger.transfer_rows import TransferRows


class Ledger:
    """One budget domain of the store. Create with :func:`mvu_store.ledger.open_ledger`."""

    def __init__(self, *, writer_engine: Engine, reader_engine: Engine, ledger_id: str,
                 state_limit_bytes: int) -> None:
        store = self._store = Store(writer_engine=writer_engine, reader_engine=reader_engine, ledger_id=ledger_id,
                                    state_limit_bytes=state_limit_bytes)
        self.ledger_id, self.dialect = store.ledger_id, store.dialect
        self.close, self.session_lock = store.close, store.session_lock
        self._bind_resources(Resources(store), Selections(store))
        facts = FactLog(store)
        self.append_fact, self.append_facts, self.facts, self.usage = (
            facts.append_fact, facts.append_facts, facts.facts, facts.usage)
        commits = Commits(store, facts)
        self.commit, self.set_management_mode = commits.commit, commits.set_management_mode
        changes = ChangeLog(store)
        self.path_changes, self.version_changes, self.turn_changes, self.states_at = (
            changes.path_changes, changes.version_changes, changes.turn_changes, changes.states_at)
        views = Views(store)
        self.session_rows, self.session_rows_since = views.session_rows, views.session_rows_since
        hosts = HostSessions(store)
        self.create_host_session, self.append_host_events = hosts.create_host_session, hosts.append_host_events
        self.host_session, self.host_session_tail, self.host_session_ids = (
            hosts.host_session, hosts.host_session_tail, hosts.host_session_ids)
        chats = ChatRows(store, self._resources, self._selections, hosts)
        self.import_chat_rows, self.export_chat_rows = chats.import_chat_rows, chats.export_chat_rows
        transfers = TransferRows(store, self._resources, facts)
        self.import_rows, self.snapshot = transfers.import_rows, transfers.snapshot
        findings = Findings(store)
        self.audit, self.damage, self.damaged_rows, self.integrity = (
            findings.audit, findings.damage, findings.damaged_rows, findings.integrity)

    def _bind_resources(self, resources: Resources, selections: Selections) -> None:
        """Resources, selections and what builds on both (seeds, instances)."""
        self._resources, self._selections = resources, selections
        self.create_resource, self.fork, self.put_checkpoint = (
            resources.create_resource, resources.fork, resources.put_checkpoint)
        self.resource, self.resources, self.head, self.head_version, self.resource_head = (
            resources.resource, resources.resources, resources.head, resources.head_version, resources.resource_head)
        self.blob, self.blobs, self.versions, self.last_message_seq, self.own_version = (
            resources.blob, resources.blobs, resources.versions, resources.last_message_seq, resources.own_version)
        self.checkpoints, self.checkpoint = resources.checkpoints, resources.checkpoint
        self.selection, self.activations, self.put_template, self.revise_template = (
            selections.selection, selections.activations, selections.put_template, selections.revise_template)
        self.templates, self.template, self.legacy_digest, self.legacy_file = (
            selections.templates, selections.template, selections.legacy_digest, selections.legacy_file)
        seeds = Seeds(self._store, resources, selections)
        self.put_seed, self.seed, self.seed_pending, self.install_seed = (
            seeds.put_seed, seeds.seed, seeds.seed_pending, seeds.install_seed)
        instances = Instances(self._store, resources, selections)
        self.record_selection, self.create_instance = instances.record_selection, instances.create_instance

    @property
    def url(self) -> str:
        return self._store.url

    @property
    def state_limit_bytes(self) -> int:
        return self._store.state_limit_bytes

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
