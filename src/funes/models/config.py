"""Settings: one table of (name, default, type, help).

Precedence, lowest first: defaults < ``funes.toml`` < ``FUNES_*`` environment variables < explicit
arguments. The home directory is the platform data directory (``~/.local/share/funes`` on Linux) unless
``FUNES_HOME`` says otherwise; never ``/tmp``. The config file is ``$FUNES_HOME/funes.toml``, or the path in
``FUNES_CONFIG``.

Every setting is registered in this module, in its section, so that ``funes config`` and the docs always see
all of them; ``docs/settings.md`` documents every one and a test checks that.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput


@dataclass(frozen=True)
class Setting:
    """One setting: its name, default, type and help text."""

    name: str
    default: Any
    type: type
    help: str
    minimum: float | None = None

    @property
    def env(self) -> str:
        """The environment variable that overrides this setting."""
        return "FUNES_" + self.name.upper()


SETTINGS: dict[str, Setting] = {}


def register(name: str, default: Any, type_: type, help: str, minimum: float | None = None) -> Setting:
    """Add a setting to the table (idempotent for the same name); numbers may have a ``minimum``."""
    setting = Setting(name, default, type_, help, minimum)
    SETTINGS[name] = setting
    return setting


# -- storage ---------------------------------------------------------------
register(
    "db_path",
    "",
    str,
    "Path of the SQLite store, or a postgresql:// URL. Empty means db_url if set, else $FUNES_HOME/funes.db.",
)
register(
    "db_url",
    "",
    str,
    "PostgreSQL URL of the store (postgresql://user:password@host:5432/db); used when db_path is empty. "
    "See docs/postgres.md.",
)
register(
    "db_read_url",
    "",
    str,
    "PostgreSQL URL of a streaming read replica: reads outside transactions go there, writes to the store. "
    "See docs/postgres.md.",
)
register("pg_pool_min", 1, int, "Connections a PostgreSQL store keeps open.", minimum=1)
register("pg_pool_max", 10, int, "Most connections a PostgreSQL store opens at once (one per busy thread).", minimum=1)
register(
    "pg_exact_max",
    4000,
    int,
    "PostgreSQL: tenants with at most this many vectors are searched exactly; larger ones use the HNSW index.",
    minimum=0,
)
register(
    "busy_timeout_ms",
    15000,
    int,
    "How long a writer waits for another process's write lock, in milliseconds.",
    minimum=0,
)
register("max_content_bytes", 1_000_000, int, "Largest content accepted for one memory, in bytes (UTF-8).", minimum=1)
register(
    "vector_cache_min",
    20_000,
    int,
    "A tenant with at least this many vectors is searched from an exact in-memory copy (faster than sqlite-vec); 0 disables.",
    minimum=0,
)
register("vector_cache_mb", 1024, int, "Memory the in-memory vector copies of large tenants may use, in MB.", minimum=0)
register(
    "ann_min",
    50_000,
    int,
    "A tenant with at least this many vectors is searched through an approximate (HNSW) index saved "
    "beside the database (<db>.ann/); 0 disables.",
    minimum=0,
)
# -- identity defaults -------------------------------------------------------
register("tenant", "default", str, "Tenant (team or user space) used when a call names none.")
register("user", "", str, "User id within the tenant used when a call names none. Empty means tenant-wide.")
register("project", "", str, "Current project id used when a call names none. Empty means no project.")
# -- embeddings --------------------------------------------------------------
register(
    "embedder",
    "local",
    str,
    "Embedding backend: 'local' (bundled all-MiniLM-L6-v2) or 'openai' (any OpenAI-compatible server).",
)
register("embed_model", "text-embedding-3-small", str, "Model name sent to an OpenAI-compatible embedding server.")
register(
    "embed_base_url",
    "https://api.openai.com/v1",
    str,
    "Base URL of the OpenAI-compatible embedding server (Ollama: http://localhost:11434/v1).",
)
register(
    "embed_api_key_env",
    "OPENAI_API_KEY",
    str,
    "Name of the environment variable holding the embedding server's API key.",
)
register("embed_dimensions", 0, int, "Vector size requested from an OpenAI-compatible server; 0 means the model's own.")
register("embed_batch_size", 32, int, "Texts per embedding batch.", minimum=1)
register(
    "embed_runtime",
    "auto",
    str,
    "How the local model runs: 'numpy' (no torch needed), 'torch' (needs funes-memory[torch]) or 'auto' "
    "(numpy; torch for large batches in a process that has imported torch already). All give the same vectors.",
)
register(
    "embed_threads", 0, int, "CPU threads for batch embedding (ingestion, reindex); 0 means one per core.", minimum=0
)
register(
    "query_threads",
    1,
    int,
    "CPU threads for embedding one search query; 1 keeps latency steady on a busy machine.",
    minimum=1,
)
register("embed_timeout", 60.0, float, "Seconds to wait for an OpenAI-compatible embedding server.", minimum=0.001)
register(
    "embedder_retry_seconds",
    10.0,
    float,
    "After the embedding server was unreachable, seconds during which searches go keyword-only and writes queue their vectors without trying it again.",
    minimum=0,
)
# -- retrieval ---------------------------------------------------------------
register("search_limit", 10, int, "Hits returned by a search when no limit is given.", minimum=1)
register(
    "context_turns",
    1,
    int,
    "Turns before and after a chat message that a search hit carries with it (0: the message alone; at most 10).",
    minimum=0,
)
register(
    "max_query_chars",
    4000,
    int,
    "Longest search query accepted, in characters (searches, agent tools, MCP and context building); 0 means no limit.",
    minimum=0,
)
register(
    "fusion",
    "convex",
    str,
    "How the keyword and vector legs combine: 'convex' (weighted sum of BM25 / best BM25 and cosine / best cosine) or 'rrf' (weighted reciprocal rank fusion).",
)
register("keyword_weight", 0.5, float, "Weight of the keyword (BM25) leg in the fusion.")
register("vector_weight", 0.5, float, "Weight of the vector (cosine) leg in the fusion.")
register("rrf_k", 60, int, "The k constant of reciprocal rank fusion (fusion = 'rrf').", minimum=1)
register("candidates", 50, int, "Candidates taken from each of the keyword and vector legs before fusion.", minimum=1)
register(
    "keyword_scan_cap",
    2000,
    int,
    "Most recent keyword matches ranked by BM25 per query; keeps common-word queries fast on big stores.",
    minimum=1,
)
register(
    "keyword_common_ratio",
    0.1,
    float,
    "On stores larger than keyword_scan_cap, query terms found in more than this share of records are left out "
    "of BM25 when rarer terms remain; 0 keeps every term.",
)
register("boost_project", 1.5, float, "Score multiplier for records of the current project.")
register("boost_team", 1.3, float, "Score multiplier for team-scope records.")
register("importance_weight", 0.5, float, "How much importance moves the score: multiplier 1 + w*(importance-0.5).")
register("recency_weight", 0.2, float, "How much recency moves the score: multiplier 1 + w*2^(-age/half_life).")
register("recency_half_life_days", 30.0, float, "Half-life of the recency boost, in days.", minimum=0.001)
register(
    "date_boost",
    0.5,
    float,
    "How much a time the query names ('on May 3', 'last week', 'in 2022') lifts records of that time: "
    "multiplier 1 + w inside the window, fading just outside it; 0 disables (docs/benchmarks.md).",
    minimum=0.0,
)
register(
    "search_min_relevance",
    0.0,
    float,
    "Calibrated relevance (0-1) a search hit needs to be returned by default; 0 keeps every ranked hit, and hits "
    "under context_min_relevance come back marked weak (docs/benchmarks.md: no single floor kept the evidence "
    "on every held-out data set).",
)
register(
    "context_min_relevance",
    0.005,
    float,
    "Calibrated relevance a memory needs to be put into an assembled context (build_context) automatically; "
    "search marks hits under it as weak.",
)
register(
    "context_unseen_name_relevance",
    0.1,
    float,
    "Calibrated relevance a memory needs to be put into an assembled context when the question names someone or "
    "something no memory mentions ('What did Gina make?' of a store that only knows Caroline); search marks hits "
    "under it as weak (docs/benchmarks.md).",
)
register(
    "context_all_sessions",
    True,
    bool,
    "Whether build_context recalls messages of the caller's earlier sessions (False: only the current session).",
)
register(
    "auto_min_similarity",
    0.4,
    float,
    "Cosine similarity automatic context needs. By default it applies when the embedder has no calibrated "
    "relevance; set it (file, env or argument) and it applies with the bundled model too.",
)
register(
    "strong_keyword_rank",
    3,
    int,
    "Keyword hits ranked this high are kept even when their cosine is under the threshold.",
)
register(
    "name_free_query_weight",
    0.0,
    float,
    "Share of a query's vector taken from the query without its names, so what it asks counts more than whom it "
    "names; 0 (default) is the query's own vector, 0.3 ranks better but lowers the relevance shown (docs/benchmarks.md).",
    minimum=0,
)
register("name_excess", True, bool, "Rank a named query's answer by what the name does not explain (benchmarks.md).")
register(
    "vector_floor",
    0.15,
    float,
    "Vector neighbours under this cosine, beyond the nearest three, are not counted as matches (keyword matches are unaffected); -1 disables.",
)
# -- ingestion -----------------------------------------------------------------
register(
    "chunk_tokens",
    200,
    int,
    "Target size of an ingested chunk, in the embedder's tokens (capped at the model's limit).",
    minimum=8,
)
register(
    "chunk_overlap",
    40,
    int,
    "Tokens of trailing sentences repeated at the start of the next chunk of a text.",
    minimum=0,
)
register(
    "passage_window_sentences",
    1,
    int,
    "A long record is also embedded as overlapping windows of this many sentences and matched by its best one "
    "(issue 28); 0 disables. Run `funes reindex` after a change.",
    minimum=0,
)
register(
    "passage_window_weight",
    0.5,
    float,
    "How much of a record's best passage window's cosine gain over its whole text counts (1: the window's cosine).",
    minimum=0,
)
register(
    "passage_window_min_tokens",
    112,
    int,
    "A record gets passage windows from this many tokens and one sentence more than a window (chat messages never).",
    minimum=1,
)
register("max_file_mb", 100, int, "Largest file ingestion accepts, in megabytes.", minimum=1)
register(
    "max_unpacked_mb",
    500,
    int,
    "Largest total a workbook (.xlsx/.xlsm, a zip archive) may unpack to, in megabytes; larger ones are refused as possible zip bombs.",
    minimum=0,
)
register(
    "max_sheet_cells",
    2_000_000,
    int,
    "Most spreadsheet cells read from one workbook or CSV/TSV file (empty cells of its declared range included); 0 means no limit.",
    minimum=0,
)
register(
    "ingest_file_seconds",
    300.0,
    float,
    "Longest time spent reading one file (any format) before it fails alone with an error; 0 means no limit.",
    minimum=0,
)
register(
    "max_text_mb",
    20,
    int,
    "Largest text, Markdown or chat file read, in megabytes (about 5 million tokens); 0 means max_file_mb only.",
    minimum=0,
)
register(
    "max_chat_messages",
    100_000,
    int,
    "Most messages read from one chat export; 0 means no limit.",
    minimum=0,
)
register(
    "max_markdown_depth",
    32,
    int,
    "Deepest nesting of lists and block quotes read from one Markdown file; 0 means no limit.",
    minimum=0,
)
register(
    "max_shared_strings_mb",
    64,
    int,
    "Largest shared-strings table of a workbook (.xlsx/.xlsm), unpacked, in megabytes; 0 means no limit.",
    minimum=0,
)
register(
    "long_cell_chars",
    200,
    int,
    "A spreadsheet text cell longer than this many characters becomes its own chunk.",
    minimum=1,
)
register("ingest_hidden_sheets", False, bool, "Also index hidden sheets of workbooks.")
# -- memory folders ------------------------------------------------------------------
register(
    "memory_folder",
    "",
    str,
    "Markdown memory folder of the memory tool and `funes sync`/`watch` when none is named. "
    "Empty means .funes/memory under the project root (the git root, else the current directory).",
)
register("memory_file_kb", 512, int, "Largest Markdown file the memory tool reads or writes, in KB.")
register("watch_debounce_seconds", 1.0, float, "How long `funes watch` waits for changes to settle before a sync job.")
# -- conversations and context ---------------------------------------------------
register(
    "context_window",
    200_000,
    int,
    "Default model context window, in tokens, when a context build names none.",
    minimum=1024,
)
register(
    "context_system_tokens",
    2000,
    int,
    "Cap on the base and memory instructions in the system message (for a 128k window; scaled down for smaller windows).",
)
register(
    "context_snapshot_tokens",
    3000,
    int,
    "Cap on <current_context> plus <recent_changes> (128k window; scaled down for smaller ones).",
)
register(
    "context_conversation_tokens",
    10_000,
    int,
    "Cap on history plus the current user message at a 128k window (scaled down for smaller windows; "
    "a larger window adds its extra tokens to it).",
)
register(
    "context_retrieved_tokens",
    5000,
    int,
    "Cap on <relevant_history>, <project_facts> and <retrieved_context> together (128k window; scaled down).",
)
register(
    "context_response_tokens",
    10_000,
    int,
    "Tokens kept free for the model's response (128k window; scaled down for smaller ones).",
)
register(
    "context_retrieved_chunks", 5, int, "Most retrieved memories injected per section (3 at a 32k window).", minimum=1
)
register(
    "context_chunk_tokens",
    1000,
    int,
    "Longest retrieved memory injected, in tokens; longer ones are truncated (256 at a 32k window).",
)
register(
    "context_fact_importance",
    0.8,
    float,
    "Importance from which project memories appear in <project_facts> (pinned ones always do).",
)
register(
    "session_retention_days",
    30,
    int,
    "Days after a session's last activity before `funes sessions prune` clears its records (pinned survive); 0 keeps sessions forever.",
    minimum=0,
)
register(
    "retention_interval_hours",
    6.0,
    float,
    "Hours between the scheduled session-retention runs of long-running processes and `funes jobs run`.",
    minimum=0.01,
)
# -- chat insights (funes.insights) ---------------------------------------------
register(
    "auto_insights",
    False,
    bool,
    "Queue a chat-insight job after each user message (default: on where a worker runs, as in `funes serve`, "
    "`funes mcp` and `funes watch`; off for the library and short commands).",
)
register(
    "insights_delay_seconds",
    30.0,
    float,
    "Seconds a queued chat-insight job waits, so a burst of messages runs once.",
    minimum=0,
)
register(
    "insight_merge_similarity",
    0.85,
    float,
    "Cosine between two chats' topics from which the new insight merges into the existing one.",
    minimum=0.0,
)
register(
    "auto_learn",
    False,
    bool,
    "Queue a learn job (facts, preferences and decisions from the user's turns) after a session's messages "
    "(default: on where a worker runs, off for the library and short commands).",
)
register(
    "learn_update_similarity",
    0.6,
    float,
    "Cosine from which a new statement of the same kind (a preference about the same thing) replaces the old one.",
    minimum=0.0,
)
# -- maintenance (funes.upkeep) ------------------------------------------------
register(
    "project_max_records",
    10_000,
    int,
    "Records a project holds before retention evicts its lowest-scoring unpinned memories (at 80%); per project: `funes config set --project P max_records N`.",
    minimum=1,
)
register(
    "max_records_total",
    100_000,
    int,
    "Records a tenant holds across all projects before retention evicts (at 80%), pinned ones never.",
    minimum=1,
)
register(
    "maintain_every_writes",
    50,
    int,
    "Writes to a tenant between background maintenance runs (purge expired, prune, dedupe, optimise); 0 turns it off.",
    minimum=0,
)
register(
    "prune_after_days",
    90,
    int,
    "Maintenance prunes unpinned, never-edited memories neither written nor read for this many days; 0 never prunes.",
    minimum=0,
)
register(
    "dedupe_similarity",
    0.95,
    float,
    "Cosine above which maintenance treats two memories of the same scope and owner as duplicates.",
    minimum=0.5,
)
register(
    "maintain_batch",
    5000,
    int,
    "Most records one maintenance run examines per step (the next run takes the rest).",
    minimum=1,
)
register(
    "vacuum_free_ratio",
    0.2,
    float,
    "Share of free pages in the store file above which maintenance reclaims the space (VACUUM).",
    minimum=0.0,
)
register(
    "promote_importance", 0.8, float, "The default promotion policy promotes records with at least this importance."
)
register(
    "promote_access_count", 3, int, "The default promotion policy promotes records retrieved at least this many times."
)
register(
    "prompts_dir",
    "",
    str,
    "Directory searched first for prompt overrides (<name>.md); $FUNES_HOME/prompts is always searched.",
)
# -- agent tools and MCP -----------------------------------------------------------
register(
    "tool_similar_threshold",
    0.95,
    float,
    "Cosine similarity at which create_memory reports an existing memory as a near duplicate.",
)
register(
    "tool_min_similarity",
    0.0,
    float,
    "Minimum cosine for agent-tool search results (strong keyword hits stay); 0 keeps every ranked hit.",
)
register(
    "tool_min_relevance",
    0.0,
    float,
    "Calibrated relevance an agent-tool search hit needs (search_memories, memory_search); 0 keeps every ranked hit. "
    "The model reads each hit's Relevance, and hits under context_min_relevance are shown as weak matches.",
)
register(
    "tool_snippet_chars",
    1500,
    int,
    "Longest text of one result shown to a model by the agent tools, in characters.",
    minimum=20,
)
register("mcp_port", 8765, int, "Port of `funes mcp --http` (always bound to 127.0.0.1).", minimum=1)
# -- LLM (summaries, topics, merges; see funes.llm) -----------------------------------
register(
    "llm",
    "offline",
    str,
    "LLM provider for summaries, topic extraction and merges: 'offline' (deterministic heuristics, no key), "
    "'openai' (any OpenAI-compatible server) or 'anthropic'. Any failed call falls back to offline.",
)
register(
    "llm_model",
    "",
    str,
    "Model name sent to the LLM provider; empty means gpt-4o-mini (openai) or claude-3-5-haiku-latest (anthropic).",
)
register(
    "llm_base_url",
    "",
    str,
    "Base URL of the LLM server; empty means https://api.openai.com/v1 (openai) or https://api.anthropic.com (anthropic). "
    "Ollama: http://localhost:11434/v1.",
)
register(
    "llm_api_key_env",
    "",
    str,
    "Name of the environment variable holding the LLM API key; empty means OPENAI_API_KEY or ANTHROPIC_API_KEY.",
)
register("llm_timeout", 60.0, float, "Seconds to wait for one LLM call.")
register("llm_max_retries", 3, int, "Retries of an LLM call answered with 429 or 5xx (or not answered), with backoff.")
register(
    "llm_backoff_seconds",
    1.0,
    float,
    "Wait before the first LLM retry; doubled for each later one (a Retry-After header wins, up to 60 s).",
)
register("llm_max_tokens", 1024, int, "Most tokens an LLM may write in one answer.")
register(
    "llm_input_price",
    -1.0,
    float,
    "USD per million prompt tokens, for the per-call cost estimate; negative means the built-in price of known models (else 0).",
)
register(
    "llm_output_price",
    -1.0,
    float,
    "USD per million completion tokens, for the per-call cost estimate; negative means the built-in price of known models (else 0).",
)
# -- background jobs ---------------------------------------------------------------
register(
    "job_lease_seconds",
    60.0,
    float,
    "Seconds a worker holds a claimed job before another worker may take it over (a running job renews it).",
    minimum=1,
)
register("job_max_attempts", 8, int, "Attempts a background job gets before it is marked failed.", minimum=1)
register(
    "job_backoff_seconds", 2.0, float, "Wait before a failed job's first retry; doubled for each later one.", minimum=0
)
register("job_backoff_max_seconds", 600.0, float, "Longest wait between two attempts of a background job.", minimum=0)
register(
    "generate_cooldown_seconds",
    60.0,
    float,
    "Least time between two memory generations of one file on the team server; requests inside it are coalesced.",
    minimum=0,
)
register("job_poll_seconds", 1.0, float, "How often an idle worker looks for new background jobs.", minimum=0.01)
register(
    "auto_work",
    True,
    bool,
    "When a command or library process that runs no worker leaves jobs due, start one short-lived detached "
    "worker that drains them and exits (as `git gc --auto` does); off: jobs wait for `funes jobs run`.",
)
register(
    "auto_work_linger_seconds",
    30.0,
    float,
    "How long that detached worker stays idle, and how far ahead it waits for a job about to fall due "
    "(a debounced insight), before it exits: a burst of commands is served by one worker.",
    minimum=0,
)
register(
    "job_keep_days",
    7.0,
    float,
    "Days a finished job stays listed in `funes jobs list`; failed jobs stay until retried.",
)


def home() -> Path:
    """The Funes home directory (created on demand by callers that write)."""
    env = os.environ.get("FUNES_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("funes", appauthor=False))


def config_path() -> Path:
    """Where ``funes.toml`` lives."""
    env = os.environ.get("FUNES_CONFIG")
    return Path(env).expanduser() if env else home() / "funes.toml"


def _coerce(setting: Setting, value: Any, origin: str) -> Any:
    if isinstance(value, setting.type) and not (setting.type is int and isinstance(value, bool)):
        return value
    try:
        if setting.type is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered in ("1", "true", "yes", "on"):
                    return True
                if lowered in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(value, bool):
            # int(True) is 1: a TOML `true` for a number is a mistake, not a 1.
            raise ValueError(value)
        if setting.type is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        result = setting.type(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInput(
            f"Setting {setting.name!r} from {origin} must be a {setting.type.__name__}, got {value!r}.",
            hint=f"Fix it in {origin}; `funes config` lists every setting.",
        ) from exc
    if setting.type in (int, float):
        # NaN, infinity and out-of-range numbers used to surface as tracebacks deep inside (issue 9).
        if not math.isfinite(result) or (setting.minimum is not None and result < setting.minimum):
            least = "" if setting.minimum is None else f" of at least {setting.minimum:g}"
            raise InvalidInput(
                f"Setting {setting.name!r} from {origin} must be a finite number{least}, got {value!r}.",
                hint=f"Fix it in {origin}; `funes config` lists every setting.",
            )
    return result


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(
            f"The config file {path} is not valid TOML: {exc}.",
            hint="Fix the file or remove it; `funes config` shows the defaults.",
        ) from exc
    section = data.get("funes", data)
    return dict(section)


@dataclass(frozen=True)
class Config:
    """Effective settings with the origin of each value."""

    values: dict[str, Any]
    origins: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def db_location(self) -> str | Path:
        """Where the store is: db_path (a file or a postgresql:// URL), else db_url, else the default file."""
        raw = str(self.values.get("db_path") or "")
        if raw.startswith(("postgres://", "postgresql://")):
            return raw
        if not raw and self.values.get("db_url"):
            return str(self.values["db_url"])
        return self.db_file

    @property
    def db_file(self) -> Path:
        """The database path, resolved against the home directory."""
        raw = self.values.get("db_path") or ""
        return Path(raw).expanduser() if raw else home() / "funes.db"


def load(**overrides: Any) -> Config:
    """Resolve every setting: defaults < funes.toml < FUNES_* env < overrides."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    path = config_path()
    file_values = _read_toml(path)
    unknown = sorted(set(file_values) - set(SETTINGS))
    if unknown:
        raise InvalidInput(
            f"Unknown setting(s) in {path}: {', '.join(unknown)}.",
            hint="Remove them; `funes config` lists every setting.",
        )
    for name, setting in SETTINGS.items():
        value, origin = setting.default, "default"
        if name in file_values:
            value, origin = _coerce(setting, file_values[name], str(path)), str(path)
        if setting.env in os.environ:
            value, origin = _coerce(setting, os.environ[setting.env], setting.env), "env"
        if overrides.get(name) is not None:
            value, origin = _coerce(setting, overrides[name], "arguments"), "argument"
        values[name] = value
        origins[name] = origin
    extra = sorted(k for k, v in overrides.items() if k not in SETTINGS and v is not None)
    if extra:
        raise InvalidInput(
            f"Unknown setting(s): {', '.join(extra)}.",
            hint="`funes config` lists every setting.",
        )
    return Config(values, origins)


def write_setting(name: str, value: str) -> Path:
    """Set one setting in funes.toml, keeping the others."""
    import tomli_w

    if name not in SETTINGS:
        raise InvalidInput(f"Unknown setting {name!r}.", hint="`funes config` lists every setting.")
    path = config_path()
    data = _read_toml(path)
    data[name] = _coerce(SETTINGS[name], value, "the command line")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Owner-only: the file may hold a store URL with its password (issue 31).
    with os.fdopen(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "w", encoding="utf-8") as out:
        out.write(tomli_w.dumps(data))
    os.chmod(path, 0o600)
    return path
