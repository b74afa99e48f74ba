"""Language-model seats: a policy is a prompt to any OpenAI-compatible chat endpoint.

``seat`` is the policy (retries, fallbacks, records), ``prompt`` the system message and the
reading of a reply, ``client`` one HTTP request, ``spec`` the ``llm:`` specs, and ``local`` a
small model served on this machine (the ``local-llm`` extra; ``local_stats`` summarises how its
seats did in a league).
"""

from agents.llm.prompt import REPLY_SCHEMA, Reply, parse_reply, system_prompt
from agents.llm.seat import LLMPolicy
from agents.llm.spec import from_spec

__all__ = ["REPLY_SCHEMA", "LLMPolicy", "Reply", "from_spec", "parse_reply", "system_prompt"]
