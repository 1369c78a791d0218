"""Named models: a TOML file that `--chooser model:NAME` refers to: `--models FILE`, else the
user's own `$XDG_CONFIG_HOME/repair-agent/models.toml` (~/.config/...), else ./models.toml when the
working directory is not inside the repository under repair nor any scenario tree (a repository
may ship a models.toml of its own: it must not say where requests go). Only the user's own file
(--models or the config directory) may name a key variable.

    [models.gpt-4o-mini]
    model = "gpt-4o-mini"
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"      # the NAME of the variable; the key never goes in a file
    temperature = 0
    max_output_tokens = 4096
    price_per_mtok_in = 0.15           # money per million prompt tokens
    price_per_mtok_out = 0.60
    max_concurrency = 4                # requests in flight to this model, across sweep workers
"""
from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MODELS_FILE = "models.toml"
MODEL_PREFIX = "model:"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,99}$")


class ModelSettings(BaseModel):
    """How to talk to one model. Unset sampling and output limits are not sent at all (reasoning
    models refuse any temperature but the default, and `max_tokens`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="name of the environment variable holding the key")
    temperature: float | None = Field(None, ge=0, le=2)
    max_output_tokens: int | None = Field(None, ge=1)
    # OpenAI's reasoning models take only max_completion_tokens; most local servers take max_tokens.
    output_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    price_per_mtok_in: float | None = Field(None, ge=0)
    price_per_mtok_out: float | None = Field(None, ge=0)
    max_concurrency: int | None = Field(None, ge=1, le=1024)
    timeout_s: float = Field(120.0, gt=0, description="one HTTP request")
    step_timeout_s: float | None = Field(None, gt=0, description="all requests of one step, retries included")
    max_retries: int = Field(4, ge=0, le=20, description="retries of a transient error, per request")
    retry_base_s: float = Field(1.0, ge=0, description="first backoff; doubles per retry")
    retry_max_s: float = Field(30.0, ge=0, description="longest backoff, and longest Retry-After honoured")
    max_reasks: int = Field(1, ge=0, le=5, description="re-asks of an unusable reply within one step")
    # False asks for one call per reply; None leaves the field out (a server that rejects it).
    parallel_tool_calls: bool | None = False
    # The target-test observation brings the mutation analysis too (up to 20 s more on the first run).
    mutation_analysis: bool = False
    # Added to every request's body as given, e.g. {chat_template_kwargs = {enable_thinking = false}}
    # for a Qwen3 on vLLM; the chooser's own parameters win over a key of the same name.
    extra_body: dict[str, Any] = {}


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, ModelSettings] = {}


class ModelsFile(BaseModel):
    """Where the models came from: only the user's own file ("explicit", "config") may name a key."""

    model_config = ConfigDict(frozen=True)

    path: Path
    origin: Literal["explicit", "config", "cwd"]

    @property
    def own(self) -> bool:
        return self.origin != "cwd"

    def __str__(self) -> str:
        return str(self.path)


def config_models_file() -> Path:
    """The user's own models file: $XDG_CONFIG_HOME/repair-agent/models.toml (~/.config when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "repair-agent" / MODELS_FILE


def _inside(path: Path, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        try:
            if path.is_relative_to(Path(root).resolve()):
                return Path(root)
        except OSError:
            continue
    return None


def find_models_file(explicit: str | os.PathLike | ModelsFile | None = None, *,
                     untrusted: Iterable[Path] = ()) -> ModelsFile | None:
    """`--models FILE` (which must exist), else the user's config directory's file, else
    ./models.toml unless the working directory is inside one of `untrusted` (the repository under
    repair, the scenario trees): then it is refused, never read."""
    if isinstance(explicit, ModelsFile):
        if not explicit.path.is_file():
            raise ValueError(f"the models file {explicit.path} is gone; pass --models FILE")
        return explicit
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ValueError(f"--models {explicit}: no such file")
        return ModelsFile(path=path.resolve(), origin="explicit")
    config = config_models_file()
    if config.is_file():
        return ModelsFile(path=config.resolve(), origin="config")
    cwd = Path.cwd().resolve()
    default = cwd / MODELS_FILE
    if not default.is_file():
        return None
    root = _inside(cwd, untrusted)
    if root is not None:
        raise ValueError(f"./{MODELS_FILE} is not read: the working directory {cwd} is inside the repository under "
                         f"repair or a scenario tree ({root}), whose files must not say where model requests go; "
                         f"put your models in {config} or pass --models FILE")
    return ModelsFile(path=default, origin="cwd")


def untrusted_roots(scenario) -> list[Path]:
    """Trees whose files are not the user's configuration: the scenario's repository and manifest
    directory, a `run --repo` run's repository, and every scenario directory."""
    from ..scenarios.scenario_files import scenario_dirs

    roots = list(scenario_dirs())
    if scenario is not None:
        roots += [Path(scenario.repo), Path(scenario.manifest_path).parent]
        from ..importers.local_repo import origin_of

        origin = origin_of(scenario.manifest_path)
        if origin is not None:
            roots.append(Path(origin.path))
    return roots


def load_models_file(path: str | os.PathLike) -> dict[str, ModelSettings]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the models file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    try:
        models = _File.model_validate(data).models
    except ValidationError as exc:
        problems = "; ".join(f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"{path}: {problems}") from None
    for name in models:
        if not NAME_RE.match(name):
            raise ValueError(f"{path}: model name {name!r} must be 1-100 letters, digits or ._:@/+- "
                             "(and start with a letter or digit)")
    return models


def named_model(name: str, models_file: str | os.PathLike | ModelsFile | None = None, *,
                untrusted: Iterable[Path] = ()) -> tuple[ModelSettings, Path]:
    """The settings of `model:NAME`, and the file they came from."""
    found = find_models_file(models_file, untrusted=untrusted)
    if found is None:
        raise ValueError(f"--chooser {MODEL_PREFIX}{name} needs a models file: --models FILE, {config_models_file()} "
                         f"or ./{MODELS_FILE} (see docs/models.md)")
    models = load_models_file(found.path)
    if name not in models:
        known = ", ".join(sorted(models)) or "none"
        raise ValueError(f"{found.path}: no model named {name!r} (defined: {known})")
    settings = models[name]
    if settings.api_key_env and not found.own:
        # A file that merely sits in the working directory could be anyone's: it would choose which
        # of the user's secrets is sent, and where.
        raise ValueError(f"{found.path}: model {name!r} names api_key_env {settings.api_key_env}, but a models file "
                         f"found in the working directory (or read back from a run's journal) may not name a key "
                         f"variable; define the model in your own models file: --models FILE or {config_models_file()}")
    return settings, found.path


def api_key_from_env(settings: ModelSettings, name: str | None) -> str | None:
    if not settings.api_key_env:
        return None
    key = os.environ.get(settings.api_key_env)
    if not key:
        label = f"model {name!r}" if name else "the model"
        raise ValueError(f"{label}: api_key_env names {settings.api_key_env}, which is not set in the environment")
    return key
