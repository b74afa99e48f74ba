"""``llm:`` policy specs: ``MODEL@URL`` for a chat endpoint, ``local`` for a model here.

Apart from the policy (``agents.llm.seat``) so that the local seat (``agents.llm.local``), which
builds on the policy, is reached from here without importing back.
"""

from __future__ import annotations

from typing import Any

from agents.llm.seat import OPTIONS, SHOWN_CHARS, LLMPolicy, parse_options, read_prompt_file
from sim.rules.errors import shown

__all__ = ["from_spec", "is_local"]


def is_local(spec: str) -> bool:
    """Whether ``spec`` (what follows ``llm:``) is a model on this machine (``local`` or
    ``local@/path/model.gguf``): its seat starts a model server that takes the CPUs itself."""
    model, _, url = spec.partition("#")[0].partition("@")
    return model == "local" and not url.startswith(("http://", "https://"))


def from_spec(spec: str, **params: Any) -> LLMPolicy:
    """Build from ``"MODEL@URL"`` (what ``make_policy("llm:MODEL@URL")`` passes).

    ``"local"`` and ``"local@/path/model.gguf"`` are a model on this machine
    (``agents.llm.local``, the ``local-llm`` extra).

    Options may follow a ``#`` as ``key=value`` pairs joined by ``&`` (values percent-encoded),
    so a league's ``--policies`` can carry them: ``timeout``, ``retry_floor``, ``max_tokens``,
    ``temperature``, ``key_env`` (the API key's variable name), ``prompt`` or ``prompt_file``
    (the operator guidance). They are the operator's configuration (``prompt_file`` is read by
    this process), held to what they are for: docs/llm.md, "Options, keys and URLs". Keyword
    ``params`` override them, e.g.
    ``make_policy("llm:m@http://127.0.0.1:8000/v1", timeout=5)``.
    """
    if not isinstance(spec, str):
        raise ValueError(f"llm policy spec must be a string; got {spec!r}")
    if is_local(spec):
        from agents.llm.local import from_spec as local_spec  # the local-llm extra's seat

        return local_spec(spec, **params)
    head, _, fragment = spec.partition("#")
    model, sep, url = head.partition("@")
    while sep and not url.startswith(("http://", "https://")) and "@" in url:
        # a model name holding "@": split at the "@" that starts the URL
        more, sep, url = url.partition("@")
        model = f"{model}@{more}"
    if not sep or not model.strip() or not url:
        raise ValueError(f"llm policy spec {shown('llm:' + spec, SHOWN_CHARS)} must look like "
                         "llm:MODEL@http(s)://HOST[:PORT]/PATH")
    kwargs = parse_options(fragment, OPTIONS)
    kwargs.update(params)
    return LLMPolicy(model, url, **read_prompt_file(kwargs))
