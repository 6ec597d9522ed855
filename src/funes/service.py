"""The Funes facade: the public API, composed of the core and the feature services.

Every shell (CLI, MCP, REST, Python callers) goes through :class:`Funes`. It
holds no logic of its own: each public method is the same method of one
service, so there is exactly one implementation of everything.

The parts, innermost first (each may use only those before it):

* ``core`` (:class:`funes.memory.core.Core`): records over a store, with ``embedding``
  (:class:`funes.memory.embedding.Embedding`) turning texts into vectors;
* ``jobs`` (:class:`funes.memory.jobs.Jobs`): the durable job runner;
* ``maintenance`` (:class:`funes.curation.health.Maintenance`): stats, doctor, reindex, clear;
* ``docs`` (:class:`funes.knowledge.documents.Documents`): ingestion and documents;
* ``conversations`` (:class:`funes.conversations.sessions.Conversations`): sessions and context;
* ``memory_folders`` (:class:`funes.knowledge.folders.Folders`): Markdown memory folders, sync and watch;
* ``writeback`` (:class:`funes.agents.capture.Capture`): remember to Markdown, ``<save_memory>`` capture;
* ``tasks`` (:class:`funes.agents.tasks.Tasks`): task summaries and their insights;
* ``agent_hooks`` (:class:`funes.agents.hooks.Hooks`): Claude Code hooks (run and install);
* ``claude_memory`` (:class:`funes.agents.memory_tool.MemoryTool`): Claude's memory tool on a memory folder;
* ``memory_stores`` (:class:`funes.agents.memory_stores.MemoryStores`): Anthropic's memory-stores API, locally;
* ``agent_tools`` (:class:`funes.agents.tools.AgentTools`): the agent tools;
* ``transfer`` (:class:`funes.memory.transfer.Transfer`): export and import;
* ``atlas`` (:class:`funes.memory.atlas.Atlas`): the knowledge map's 2-D layout (``Funes.memory_map``);
* ``facets`` (:class:`funes.memory.facets.Facets`): counts of records per reference (``Funes.reference_counts``);
* ``curation`` (:class:`funes.curation.versions.Curation`): version history, restore and redact;
* ``review`` (:class:`funes.curation.proposals.Proposals`): machine proposals on records people own;
* ``entities`` (:class:`funes.curation.entities.Entities`): entity reconciliation;
* ``insights`` (:class:`funes.curation.insights.Insights`): chat insights, one merged memory per topic;
* ``learning`` (:class:`funes.curation.learn.Learning`): facts, preferences and decisions learned from conversations;
* ``upkeep`` (:class:`funes.curation.upkeep.Upkeep`): maintenance, scheduled retention, find_duplicates/stale/related.
* ``keys`` (:class:`funes.memory.keys.Keys`): the team server's API keys;
* ``generation`` (:class:`funes.curation.generation.Generation`): generate/regenerate as cooled-down jobs;
* ``uploads`` (:class:`funes.knowledge.uploads.Uploads`): uploaded documents indexed by jobs;
* ``document_topics`` (:class:`funes.knowledge.topics.DocumentTopics`): topics for documents indexed before them;
* ``passage_windows`` (:class:`funes.memory.passages.PassageWindows`): passage windows of records stored before them;
* ``forgetting`` (:class:`funes.curation.forgetting.Forgetting`): forget everywhere with a receipt, verify it;
* ``provenance`` (:class:`funes.curation.provenance.Provenance`): ``why``, a record's sources and derivatives.

See ``docs/architecture.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from .agents.capture import Capture
from .agents.hooks import Hooks
from .agents.memory_stores import MemoryStores
from .agents.memory_tool import MemoryTool
from .agents.tasks import Tasks
from .agents.tools import AgentTools
from .conversations.sessions import Conversations
from .curation.entities import Entities
from .curation.forgetting import Forgetting
from .curation.generation import Generation
from .curation.health import Maintenance
from .curation.insights import Insights
from .curation.learn import Learning
from .curation.proposals import Proposals
from .curation.provenance import Provenance
from .curation.upkeep import Upkeep
from .curation.versions import Curation
from .knowledge.documents import Documents
from .knowledge.folders import Folder, Folders
from .knowledge.topics import DocumentTopics
from .knowledge.uploads import Uploads
from .memory.atlas import Atlas
from .memory.core import Core
from .memory.embedding import Embedding
from .memory.facets import Facets
from .memory.jobs import Jobs
from .memory.keys import Keys
from .memory.passages import PassageWindows
from .memory.transfer import Transfer
from .models import SearchQuery, SearchResults
from .models import config as config_mod
from .providers.embed import Embedder
from .store import Store, open_store

_F = TypeVar("_F", bound=Callable[..., Any])

#: Settings that default to on in a process that runs the worker (``open(worker="on")``).
WORKER_DEFAULTS = ("auto_insights", "auto_learn")


def _delegate(part: str, func: _F) -> _F:
    """A facade method that calls ``func`` on the named part; its name, docstring and signature are kept."""
    name = func.__name__

    @functools.wraps(func)
    def method(self: Funes, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(self, part), name)(*args, **kwargs)

    return cast(_F, method)


class Funes:
    """Long-term memory: records, documents, conversations, agent tools, jobs and transfer."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | Callable[[], Embedder],
        config: config_mod.Config,
        *,
        check_embedder: bool = True,
        worker: str = "auto",
    ) -> None:
        self.core = Core(store, embedder, config, check_embedder=check_embedder)
        # What a detached worker needs to open this store the same way; None when the embedder is an
        # instance the caller made (a child process cannot rebuild it: this process drains its own jobs).
        self._worker_settings: dict[str, str | None] | None = (
            None
            if hasattr(embedder, "embed_batch")
            else {"FUNES_DB_PATH": str(config.db_location), "FUNES_EMBEDDER": str(config.embedder)}
        )
        self.embedding = self.core.embedding
        self.jobs = Jobs(self.core, worker=worker)
        self.maintenance = Maintenance(self.core)
        self.docs = Documents(self.core)
        self.conversations = Conversations(self.core, self.docs)
        self.memory_folders = Folders(self.core, self.docs, self.jobs)
        self.claude_memory = MemoryTool(self.memory_folders)
        self.memory_stores = MemoryStores(self.core, self.memory_folders)
        self.writeback = Capture(self.core, self.memory_folders)
        # Task insights use the same LLM as reconciliation (created on first use).
        self.tasks = Tasks(self.core, self.memory_folders, llm=lambda: self.entities.llm)
        self.agent_hooks = Hooks(self.core, self.writeback, self.tasks)
        self.agent_tools = AgentTools(self.core, self.conversations, self.writeback.write_back)
        self.transfer = Transfer(self.core)
        self.atlas = Atlas(self.core)
        self.facets = Facets(self.core)
        self.curation = Curation(self.core)
        self.review = Proposals(self.core)
        self.entities = Entities(self.core, self.jobs)
        self.insights = Insights(self.core, self.conversations, llm=lambda: self.entities.llm)
        self.jobs.register("insights", self.insights.job)
        self.learning = Learning(self.core, self.conversations, llm=lambda: self.entities.llm)
        self.jobs.register("learn", self.learning.job)
        self.upkeep = Upkeep(self.core, self.jobs, self.docs, self.conversations.prune_sessions)
        self.keys = Keys(self.core)
        self.generation = Generation(self.core, self.jobs, self.entities)
        self.uploads = Uploads(self.core, self.docs, self.jobs)
        self.document_topics = DocumentTopics(self.core, self.jobs)  # labels documents indexed before topics
        self.passage_windows = PassageWindows(self.core, self.jobs)  # windows of records stored before them
        self.forgetting = Forgetting(self.core, self.memory_folders, self.uploads)
        self.provenance = Provenance(self.core)
        if worker == "on":
            self.jobs.start()  # after every service registered its job kinds and schedules

    # -- the parts' shared state -----------------------------------------------------
    @property
    def store(self) -> Store:
        """The storage backend."""
        return self.core.store

    @property
    def config(self) -> config_mod.Config:
        """The resolved settings."""
        return self.core.config

    @property
    def embedder(self) -> Embedder:
        """The embedder (created on first use: commands that do not embed never touch it)."""
        return self.embedding.embedder

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Stop the job worker (if this process started one), hand due jobs to a detached one, close the store."""
        self.jobs.stop()
        if self._worker_settings is not None:
            self.jobs.hand_off(self._worker_settings)
        self.entities.close()
        self.core.close()

    def __enter__(self) -> Funes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- records (core) ----------------------------------------------------------------
    remember = _delegate("writeback", Capture.remember)  # the core's, plus to_markdown and tags
    remember_many = _delegate("core", Core.remember_many)
    prepare = _delegate("core", Core.prepare)
    get = _delegate("core", Core.get)
    update = _delegate("core", Core.update)
    pin = _delegate("core", Core.pin)
    unpin = _delegate("core", Core.unpin)
    forget = _delegate("core", Core.forget)
    forget_many = _delegate("core", Core.forget_many)
    preview_forget = _delegate("forgetting", Forgetting.preview)
    forget_everywhere = _delegate("forgetting", Forgetting.forget)
    verify_forgotten = _delegate("forgetting", Forgetting.verify)
    forget_receipt = _delegate("forgetting", Forgetting.receipt)
    why = _delegate("provenance", Provenance.why)
    list = _delegate("core", Core.list)
    reference_counts = _delegate("facets", Facets.reference_counts)

    def search(self, query: str | SearchQuery, **options: Any) -> SearchResults:
        """Hybrid search: the best hits for ``query``, each explained, attributed and with its relevance.

        ``query`` is the text (``**options`` are the fields of :class:`~funes.models.SearchQuery`:
        ``limit``, ``types``, ``project``, ``as_of``, ``min_relevance``, ``group_by``, ...) or a
        ``SearchQuery`` built once by the caller (options then replace its fields). An unknown
        option is refused. See :meth:`funes.memory.core.Core.search` for how it ranks.
        """
        return self.core.search(SearchQuery.of(query, **options))

    # -- version history (``history`` is a session's messages; a record's states are ``versions``) --------
    versions = _delegate("curation", Curation.versions)
    restore = _delegate("curation", Curation.restore)
    redact_version = _delegate("curation", Curation.redact_version)

    # -- proposals: a machine's text for a record a person wrote or pinned (issue 25) -------------
    proposals = _delegate("review", Proposals.list)
    accept_proposal = _delegate("review", Proposals.accept)
    dismiss_proposal = _delegate("review", Proposals.dismiss)

    # -- entity reconciliation ------------------------------------------------------------------
    reconcile = _delegate("entities", Entities.reconcile)
    process_chat = _delegate("insights", Insights.process_chat)
    learn = _delegate("learning", Learning.learn)

    # -- the team server: generation, uploads, project settings, keys ----------------------------
    generate = _delegate("generation", Generation.generate)
    regenerate = _delegate("generation", Generation.regenerate)
    upload = _delegate("uploads", Uploads.upload)

    # -- store-wide care -------------------------------------------------------------------
    stats = _delegate("maintenance", Maintenance.stats)
    doctor = _delegate("maintenance", Maintenance.doctor)
    health = _delegate("maintenance", Maintenance.health)
    backup = _delegate("maintenance", Maintenance.backup)
    repair = _delegate("maintenance", Maintenance.repair)
    reindex = _delegate("maintenance", Maintenance.reindex)
    clear = _delegate("maintenance", Maintenance.clear)
    cleanup_log = _delegate("maintenance", Maintenance.cleanup_log)
    maintain = _delegate("upkeep", Upkeep.maintain)
    find_duplicates = _delegate("upkeep", Upkeep.find_duplicates)
    find_stale = _delegate("upkeep", Upkeep.find_stale)
    find_related = _delegate("upkeep", Upkeep.find_related)
    project_settings = _delegate("upkeep", Upkeep.project_settings)
    configure_project = _delegate("upkeep", Upkeep.configure_project)

    # -- embedding ------------------------------------------------------------------------
    embed = _delegate("embedding", Embedding.embed)
    embed_records = _delegate("embedding", Embedding.embed_records)
    embed_query = _delegate("embedding", Embedding.embed_query)
    parts = _delegate("embedding", Embedding.parts)

    # -- documents -----------------------------------------------------------------------
    chunk_note = _delegate("docs", Documents.chunk_note)
    ingest = _delegate("docs", Documents.ingest)
    ingest_paths = _delegate("docs", Documents.ingest_paths)
    documents = _delegate("docs", Documents.documents)
    document = _delegate("docs", Documents.document)
    document_chunks = _delegate("docs", Documents.document_chunks)
    remove_document = _delegate("docs", Documents.remove_document)
    reindex_document = _delegate("docs", Documents.reindex_document)
    reindex_documents = _delegate("docs", Documents.reindex_documents)

    # -- memory folders ----------------------------------------------------------------------
    def add_folder(
        self, path: str | os.PathLike[str] | None = None, *, project: str | None = None, tenant: str | None = None
    ) -> Folder:
        """Register a memory folder (:meth:`Folders.add_folder`); the memory stores' memories appear in it at once."""
        folder = self.memory_folders.add_folder(path, project=project, tenant=tenant)
        self.memory_stores.mirror_all(tenant=tenant)
        return folder

    folders = _delegate("memory_folders", Folders.folders)
    folder = _delegate("memory_folders", Folders.folder)
    remove_folder = _delegate("memory_folders", Folders.remove_folder)
    default_folder = _delegate("memory_folders", Folders.default_folder)
    sync = _delegate("memory_folders", Folders.sync)
    folder_status = _delegate("memory_folders", Folders.status)
    watch = _delegate("memory_folders", Folders.watch)
    memory_tool = _delegate("claude_memory", MemoryTool.memory_tool)
    capture = _delegate("writeback", Capture.capture)
    write_back = _delegate("writeback", Capture.write_back)
    record_task = _delegate("tasks", Tasks.record_task)
    run_hook = _delegate("agent_hooks", Hooks.run_hook)
    install_claude_code = _delegate("agent_hooks", Hooks.install_claude_code)

    # -- conversations ----------------------------------------------------------------------
    session = _delegate("conversations", Conversations.session)
    sessions = _delegate("conversations", Conversations.sessions)
    add_message = _delegate("conversations", Conversations.add_message)
    add_messages = _delegate("conversations", Conversations.add_messages)
    history = _delegate("conversations", Conversations.history)
    record_usage = _delegate("conversations", Conversations.record_usage)
    usage = _delegate("conversations", Conversations.usage)
    memory_instructions = _delegate("conversations", Conversations.memory_instructions)
    context_budget = _delegate("conversations", Conversations.context_budget)
    build_context = _delegate("conversations", Conversations.build_context)
    prune_sessions = _delegate("conversations", Conversations.prune_sessions)
    clear_session = _delegate("conversations", Conversations.clear_session)
    pop_message = _delegate("conversations", Conversations.pop_message)
    promote = _delegate("conversations", Conversations.promote)

    # -- agent tools ------------------------------------------------------------------------
    execute_tool = _delegate("agent_tools", AgentTools.execute_tool)
    run_tool_calls = _delegate("agent_tools", AgentTools.run_tool_calls)
    read_memory = _delegate("agent_tools", AgentTools.read_memory)

    # -- export and import --------------------------------------------------------------------
    export_lines = _delegate("transfer", Transfer.export_lines)
    memory_map = _delegate("atlas", Atlas.layout)
    export = _delegate("transfer", Transfer.export)

    def import_(self, lines: Iterable[str], *, tenant: str | None = None) -> dict[str, int]:
        """Import an export (:meth:`Transfer.import_`); imported memory stores are mirrored to their folders."""
        result = self.transfer.import_(lines, tenant=tenant)
        if result.get("memory_stores") or result.get("memory_store_versions"):
            self.memory_stores.mirror_all(every_tenant=True)
        return result

    # -- background jobs ----------------------------------------------------------------------
    run_jobs = _delegate("jobs", Jobs.run_pending)
    start_worker = _delegate("jobs", Jobs.start)


def open(
    path: str | None = None,
    *,
    embedder: Embedder | str | None = None,
    check_embedder: bool = True,
    worker: str = "auto",
    **settings: Any,
) -> Funes:
    """Open (or create) a Funes store. ``path`` defaults to ``$FUNES_HOME/funes.db``.

    ``path`` may be a ``postgresql://`` URL (or set ``FUNES_DB_URL``) for a
    PostgreSQL store with pgvector; see docs/postgres.md.

    ``embedder`` is an :class:`Embedder` instance, or the name of a backend
    (the ``embedder`` setting: ``local``, ``openai``, ``hash``). A backend
    named by the settings is created on first use, so commands that do not
    embed (list, get, stats, export, doctor, ...) work while it is down.

    ``worker`` says who runs this process's background jobs: ``"auto"`` (the
    default) starts the worker thread when the process queues a job, ``"on"``
    starts it now (long-running processes; there ``auto_insights`` and
    ``auto_learn`` are on unless set), ``"off"`` never (short commands; run
    them with :meth:`Funes.run_jobs` or ``funes jobs run``).
    """
    from .providers.embed import create_embedder

    if isinstance(embedder, str):
        # The CLI's --embedder names a backend; it is the setting, not an instance.
        settings["embedder"], embedder = embedder, None
    config = config_mod.load(db_path=path, **settings)
    if worker == "on":
        # Where a worker runs (funes serve, mcp, watch), chat insights and learning are on unless set.
        worker_defaults = {n: True for n in WORKER_DEFAULTS if config.origins[n] == "default"}
        config = dataclasses.replace(
            config,
            values={**config.values, **worker_defaults},
            origins={**config.origins, **dict.fromkeys(worker_defaults, "worker")},
        )
    location = config.db_location
    if isinstance(location, str):
        store = open_store(
            location,
            pool_min=config.pg_pool_min,
            pool_max=config.pg_pool_max,
            exact_max=config.pg_exact_max,
            read_url=config.db_read_url,
        )
    else:
        store = open_store(
            location,
            busy_timeout_ms=config.busy_timeout_ms,
            vector_cache_min=config.vector_cache_min,
            vector_cache_mb=config.vector_cache_mb,
            ann_min=config.ann_min,
        )
    try:
        # The store's recorded identity spares an OpenAI-compatible server a size probe.
        factory = functools.partial(create_embedder, config, store.identity())
        return Funes(store, embedder or factory, config, check_embedder=check_embedder, worker=worker)
    except BaseException:
        store.close()
        raise
