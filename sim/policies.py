"""Policy specs -> policies: a registry that ``sim`` owns and other packages fill.

The environments take their opponents as specs (``"factor"``, ``"sb3:model.zip"``,
``"my.module:MyPolicy"``, ``{"name": "factor", "sell_margin": 1}``) and must resolve them
without importing ``agents`` (``sim`` sits below every other package).  So names are looked up
here, in a registry that packages fill in one of two ways:

* **Entry points** (for installed distributions): a package declares, in its
  ``pyproject.toml``::

      [project.entry-points."guild.policies"]
      factor = "agents:Factor"

  The entry point is loaded only when its name is first asked for.  Our own distribution
  declares the baselines this way, so ``gymnasium.make("sim:guild/Guild-v0")`` finds factor
  and magpie in a fresh interpreter.  Batched policies (``act(engine, rows, seats)``) use the
  group ``guild.batched_policies``.  A name is one policy: another distribution's declaration
  of a built-in name, or of a name declared before it, is ignored with a warning naming it.
* **At run time**: :meth:`PolicyRegistry.register`, e.g. from a package's ``__init__``; a
  name already known is replaced with a warning (as Gymnasium's ``register`` does), unless
  asked for (``replace=True``).

A name may also prefix a spec (``"sb3:model.zip"``): the factory then receives the rest of the
spec as ``spec=``.  Anything else with a colon is ``"module.path:Name"``, imported as given.

**Policy functions.**  ``Name`` (or an object given to :meth:`PolicyRegistry.make`) may be a
plain function of the seat's view, as a Kaggle agent is a function of its observation::

    def my_policy(view: dict) -> str:
        return "I wait and watch the road."

It is called each turn with what a seat that runs apart is sent (``sim.seat_view.turn_view``:
turn, seat, turns, aliases, commissions, observation, text, legal, admissible) and returns a
sentence.  The rule that tells it from a class or a factory is :func:`is_policy_function`,
applied here and nowhere else: a plain function (``def`` or ``lambda``; not a class, a
builtin, a bound method, a ``partial`` or an object with ``__call__``) requiring exactly one
positional argument, named without parameters.  Everything else is built as before, called
with the spec's parameters: a class, or a factory (a function requiring no positional
argument, or one given parameters).  Called with nothing, a function requiring an argument
could never have built a policy, so no spec that built one before changes meaning.  A function
requiring two or more (``def f(game, seat)``) is refused, naming the fix, as is one that the
view alone cannot call (a required keyword-only argument) or whose call returns no sentence
(``async def``, a generator): every turn of it would be a fault.  Names registered or
declared by entry points are factories by declaration (``from_spec(spec, **params)``), never
policy functions.  The class that plays a function (``sim.seat_view.FunctionPolicy``) builds
the view from the action table, so this registry sits above ``sim.codec`` (pyproject's
``sim-wings`` contract): only the environments use it.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.machinery
import importlib.metadata
import inspect
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .seat_view import FunctionPolicy

log = logging.getLogger(__name__)

POLICY_GROUP = "guild.policies"
BATCHED_POLICY_GROUP = "guild.batched_policies"
OWN_DISTRIBUTION = "guild-game"  # declares the built-in names (pyproject.toml), which win
TRUSTED_PREFIX = "trusted"  # a league's spec prefix (league.core.lineups.TRUSTED), no policy
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class PolicyRegistry:
    """Names (and spec prefixes) -> policy factories, filled by entry points or ``register``.

    Args:
        group: the entry-point group read for names not registered at run time.
        is_policy: what a built object must satisfy to be accepted.
        requirement: how to say what a policy is, in error messages.
        functions: the class that plays a policy function (built with the function and the
            spec), or None where a policy function cannot play (it is refused, saying so).
    """

    def __init__(self, group: str, is_policy: Callable[[object], bool], requirement: str,
                 functions: Callable[[Callable[[dict], Any], str], Any] | None = None) -> None:
        self.group = group
        self.is_policy = is_policy
        self.requirement = requirement
        self.functions = functions
        self._factories: dict[str, Callable[..., Any]] = {}
        self._entry_points: dict[str, importlib.metadata.EntryPoint] | None = None
        # Fast paths of ``make`` without params (environments build opponents every episode):
        # plain names already resolved to a class, and classes whose objects are policies.
        self._classes: dict[str, type] = {}
        self._ready: set[type] = set()

    def register(self, name: str, factory: Callable[..., Any], replace: bool = False) -> None:
        """Make ``name`` (case-insensitive) build policies with ``factory(**params)``.

        A name already known (registered, or declared by an entry point, a built-in among
        them) is replaced with a ``RuntimeWarning`` unless ``replace``: a silent replacement
        would change what every later spec of that name plays.  (Not an error: a notebook cell
        that registers a policy may run again.)
        """
        if not isinstance(name, str) or not name.strip() or ":" in name:
            raise ValueError(f"a policy name must be a non-empty word without ':'; got {name!r}")
        key = name.strip().lower()
        if not replace and (self._factories.get(key, factory) is not factory
                            or key not in self._factories and key in self._declared()):
            warnings.warn(f"policy name {key!r} was already known (in group {self.group!r}) "
                          "and now builds another policy; pass replace=True to say so, or "
                          "choose another name", RuntimeWarning, stacklevel=2)
        self._factories[key] = factory
        self._classes.clear()

    def names(self) -> list[str]:
        """Every name known now: registered ones and declared entry points."""
        return sorted(set(self._factories) | set(self._declared()))

    def key(self, spec: str) -> str:
        """Equal for two specs exactly when they name one policy: a registered name (or the
        prefix of a spec, ``PPO:run.pt``) in any case, the rest as written (a module or a file
        name may differ in case alone)."""
        spec = spec.strip()
        head, colon, rest = spec.partition(":")
        return head.lower() + colon + rest if head.strip().lower() in self.names() else spec

    def factory(self, name: str) -> Callable[..., Any] | None:
        """The factory of ``name``, loading its entry point on first use; None if unknown."""
        key = name.strip().lower()
        if key in self._factories:
            return self._factories[key]
        ep = self._declared().get(key)
        if ep is None:
            return None
        try:
            factory = ep.load()
        except Exception as e:  # a third party's broken entry point: name it and go on
            raise ValueError(f"policy {name!r}: its entry point {ep.value!r} in group "
                             f"{self.group!r} cannot be loaded ({type(e).__name__}: {e})") from e
        self._factories[key] = factory
        return factory

    def make(self, spec: Any, **params: Any) -> Any:
        """Build a policy from a spec and keyword parameters.

        ``spec`` is a registered name (case-insensitive), ``"name:rest"`` for a registered
        name that takes a spec of its own (``"sb3:model.zip"``), ``"module.path:Name"``
        naming a class, a factory or a policy function (:func:`is_policy_function`) in an
        importable module (``Name`` may be dotted), a mapping ``{"name": spec, **params}``, a
        class, a function, or a ready policy object (no params).  Raises ``ValueError`` naming
        the spec for anything unknown or unbuildable.
        """
        if not params:
            if type(spec) is str:
                cls = self._classes.get(spec)
                if cls is not None:
                    return cls()
            elif type(spec) in self._ready:
                return spec
        if isinstance(spec, Mapping):
            d = dict(spec)
            if "name" not in d:
                raise ValueError(f"a policy spec mapping needs a 'name' key; got {sorted(d)}")
            name = d.pop("name")
            if isinstance(name, Mapping):  # one level: a chain of them would only recurse
                raise ValueError("a policy spec mapping's 'name' is a name, a class or a "
                                 "policy, not another mapping")
            return self.make(name, **{**d, **params})
        if isinstance(spec, str):
            return self._from_string(spec, params)
        if isinstance(spec, type):
            return self._build(spec, spec.__name__, params)
        if inspect.isfunction(spec):
            return self._build(spec, f"{spec.__module__}:{spec.__qualname__}", params,
                               declared=False)
        if self.is_policy(spec):
            if params:
                raise ValueError(f"parameters {sorted(params)} given for a ready policy object "
                                 f"{spec!r}")
            if self.is_policy(type(spec)):  # a policy by its class, not by instance attributes
                self._ready.add(type(spec))
            return spec
        raise ValueError(f"unknown policy {spec!r}: not {self.requirement} nor a spec "
                         f"({self._known()})")

    def _from_string(self, spec: str, params: dict[str, Any]) -> Any:
        key = spec.strip()
        factory = self.factory(key) if ":" not in key and key else None
        if factory is not None:
            policy = self._build(factory, spec, params)
            if not params and isinstance(factory, type) and self.is_policy(factory):
                self._classes[spec] = factory
            return policy
        prefix, _, rest = key.partition(":")
        if prefix and ":" in key:
            factory = self.factory(prefix) if "." not in prefix else None
            if factory is not None:
                return self._build(factory, spec, {"spec": rest, **params})
            try:
                found = import_object(key)
            except ValueError:
                if prefix.strip().lower() != TRUSTED_PREFIX:  # a module of that name comes first
                    raise
                raise ValueError(f"policy {spec!r}: trusted: is a guild league prefix (it runs a "
                                 "policy in the league's own process); here every policy already "
                                 f"runs in this process: name it without the prefix ({rest!r})"
                                 ) from None
            return self._build(found, spec, params, declared=False)
        raise ValueError(f"unknown policy {spec!r}; {self._known()}{self._hint(key)}")

    def _hint(self, key: str) -> str:
        """What the user probably meant by an unknown name: a near name, or a model file's
        kind (a path names no policy by itself)."""
        if "/" in key or os.sep in key or key.endswith((".pt", ".zip")) or os.path.exists(key):
            if key.endswith(".zip"):
                return f"; a Stable-Baselines3 model is 'sb3:{key}'"
            if key.endswith(".pt") or os.path.isdir(key):
                return f"; a model of guild train is 'ppo:{key}'"
            return f"; a model file is 'ppo:{key}' (guild train) or 'sb3:{key}' (a zip)"
        near = difflib.get_close_matches(key.lower(), self.names(), n=1, cutoff=0.6)
        return f"; did you mean {near[0]!r}?" if near else ""

    def _build(self, factory: Any, spec: object, params: dict[str, Any],
               declared: bool = True) -> Any:
        """The policy ``factory`` builds with ``params``; an object that ``declared`` no
        factory (imported by ``module:Name``, or given) may be a policy function instead."""
        if self.is_policy(factory) and not isinstance(factory, type):
            if params:
                raise ValueError(f"policy {spec!r} is an object, not a class; it takes no "
                                 f"parameters (got {sorted(params)})")
            return factory
        if not callable(factory):
            raise ValueError(f"policy {spec!r} is neither a policy nor a class or factory")
        if not declared and not params:
            misfit = _misfit(factory, spec)
            if misfit is not None:
                raise ValueError(misfit)
            if is_policy_function(factory):
                return self._function_policy(factory, spec)
        try:
            policy = factory(**params)
        except TypeError as e:
            hint = ""
            if not declared and is_policy_function(factory):
                hint = "; a policy function (one argument: the seat's view) takes no parameters"
            elif not declared and not isinstance(factory, type) and not inspect.isfunction(
                    factory):  # a partial, a bound method, an object with __call__
                hint = ("; a policy function is a plain function (def or lambda), not "
                        f"{type(factory).__name__}")
            raise ValueError(f"policy {spec!r}: bad parameters {sorted(params)} ({e}){hint}"
                             ) from e
        if not self.is_policy(policy):
            raise ValueError(f"policy {spec!r} built {type(policy).__name__}, which is not "
                             f"{self.requirement}")
        return policy

    def _function_policy(self, fn: Callable[[dict], Any], spec: object) -> Any:
        """The policy that plays ``fn`` (``functions``), or why it cannot play here."""
        if self.functions is None:
            raise ValueError(f"policy {spec!r} is a policy function (one argument: the seat's "
                             f"view), not {self.requirement}")
        return self.functions(fn, spec if isinstance(spec, str) else "")

    def _declared(self) -> dict[str, importlib.metadata.EntryPoint]:
        """The group's entry points by name, read once, when a name is first looked up."""
        if self._entry_points is None:
            try:
                eps = importlib.metadata.entry_points(group=self.group)
            except Exception as e:  # broken metadata of some installed distribution
                log.warning("cannot read entry points of group %r: %s", self.group, e)
                eps = ()
            self._entry_points = declared_once(self.group, eps)
        return self._entry_points

    def _known(self) -> str:
        names = self.names()
        listed = ", ".join(names) if names else "none registered"
        return f"known: {listed}, or 'module.path:Name'"


def declared_once(group: str, eps: Iterable[importlib.metadata.EntryPoint]
                  ) -> dict[str, importlib.metadata.EntryPoint]:
    """Entry points by name, each name kept once: a name two distributions declare would
    otherwise resolve to one of them by ``sys.path`` order, unannounced.  A built-in name
    (declared by :data:`OWN_DISTRIBUTION`) stays the built-in; of other clashes the first
    declaration is kept.  Each refused declaration is one warning naming its distribution.
    Distributions are named only for a clash (reading their metadata costs time)."""
    by_name: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for ep in eps:
        by_name.setdefault(ep.name.strip().lower(), []).append(ep)
    kept: dict[str, importlib.metadata.EntryPoint] = {}
    for key, declared in by_name.items():
        if len(declared) > 1:
            named = sorted(((_distribution(ep), ep) for ep in declared),
                           key=lambda pair: pair[0] != OWN_DISTRIBUTION)  # stable: path order
            first_dist, first = named[0]
            whose = ("the built-in" if first_dist == OWN_DISTRIBUTION
                     else f"{first_dist}'s ({first.value})")
            for dist, ep in named[1:]:
                if (dist, ep.value) != (first_dist, first.value):  # not one seen twice
                    warnings.warn(f"policy {key!r} in entry-point group {group!r}: {dist}'s "
                                  f"declaration ({ep.value}) is ignored; {key!r} stays {whose}",
                                  RuntimeWarning, stacklevel=2)
            declared = [first]
        kept[key] = declared[0]
    return kept


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    """The normalized name of the distribution that declares ``ep`` ('?' when unknown)."""
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return re.sub(r"[-_.]+", "-", name).lower() if isinstance(name, str) else "?"


def required_positional(obj: object) -> int | None:
    """How many positional arguments a plain function (``def`` or ``lambda``) requires; None
    for anything else (a class, a builtin, a bound method, a ``partial``, a callable object)
    or a function whose signature cannot be read."""
    if not inspect.isfunction(obj):
        return None
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(p.kind in _POSITIONAL and p.default is p.empty for p in parameters)


def is_policy_function(obj: object) -> bool:
    """Whether ``obj``, named without parameters, is a policy function (module docstring): a
    plain function requiring exactly one positional argument, the seat's view.  A class or a
    factory (a function requiring none) is called to build a policy instead."""
    return required_positional(obj) == 1


def _misfit(fn: Any, spec: object) -> str | None:
    """Why a function requiring positional arguments plays nowhere (None for any other object,
    and for a policy function that can play): called with nothing it builds nothing, and
    called with the view alone it returns no sentence (two or more arguments, a required
    keyword-only one, ``async def`` or ``yield``), so each of its turns would be a fault."""
    n = required_positional(fn)
    if n is None or n < 1:
        return None
    parameters = inspect.signature(fn).parameters.values()
    if n >= 2:
        names = ", ".join(p.name for p in parameters
                          if p.kind in _POSITIONAL and p.default is p.empty)
        return (f"policy {spec!r} is a function of {n} arguments ({names}); a policy "
                "function takes one: the seat's view")
    keywords = [p.name for p in parameters
                if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty]
    if keywords:
        return (f"policy {spec!r} requires keyword-only arguments ({', '.join(keywords)}); a "
                "policy function is called with the seat's view alone")
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return (f"policy {spec!r} is an async function (async def): its call returns no "
                "sentence; a policy function is a plain def")
    if inspect.isgeneratorfunction(fn):
        return (f"policy {spec!r} is a generator function: it returns a generator, not a "
                "sentence; a policy function returns its sentence")
    return None


def import_object(spec: str) -> Any:
    """The object named by ``"module.path:Name"`` (``Name`` may be dotted)."""
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise ValueError(f"policy spec {spec!r} must look like 'module.path:Name'")
    try:
        obj: Any = _import_module(module_name)
    except ImportError as e:
        missing = getattr(e, "name", None)
        hint = ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            hint = ("; Python looks for it on sys.path: run from the folder that holds it, or "
                    "add that folder to PYTHONPATH")
        raise ValueError(f"policy {spec!r}: cannot import module {module_name!r} ({e}){hint}"
                         ) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"policy {spec!r}: module {module_name!r} has no {attr!r}") from None
    return obj


def _import_module(name: str) -> Any:
    """``importlib.import_module(name)``, or else from the current folder, as ``python -m``
    would find it: a spec names a module in the folder it is run from. Only that one import
    looks there (the folder is on the path while it loads, so its own imports of its
    neighbours work); the folder is never left on the path, where a file in it could stand in
    for a module imported later (an optional dependency, or our own packages, which an editable
    install finds after the path)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        top = name.split(".")[0]
        try:
            here = os.getcwd()
        except OSError:  # the folder was deleted: nothing to find there
            raise e from None
        on_path = any(os.path.abspath(p or os.curdir) == here for p in sys.path)
        if e.name != top or on_path or importlib.machinery.PathFinder.find_spec(
                top, [here]) is None:
            raise
    sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(here)


def _acts(obj: object) -> bool:
    return callable(getattr(obj, "act", None))


def _acts_batched(obj: object) -> bool:
    return getattr(obj, "batched", False) is True and callable(getattr(obj, "act", None))


POLICIES = PolicyRegistry(POLICY_GROUP, _acts, "a policy with act(game, seat)",
                          functions=FunctionPolicy)
"""Scalar policies: ``act(game, seat) -> sentence | Intent | decision``, and policy functions
``f(view) -> sentence``."""

BATCHED_POLICIES = PolicyRegistry(BATCHED_POLICY_GROUP, _acts_batched,
                                  "a batched policy (batched = True, act(engine, rows, seats))")
"""Batched policies for ``sim.envs.vector``: ``act(engine, rows, seats) -> action indices``."""


def make_policy(spec: Any, **params: Any) -> Any:
    """:meth:`PolicyRegistry.make` of the scalar registry (``agents.make_policy`` is this)."""
    return POLICIES.make(spec, **params)


def check_town(policies: Iterable[Any], world: Any) -> None:
    """Ask each policy that can tell whether it plays ``world``: its ``check_world(world)``
    raises ``ValueError`` when it does not (``champion`` plays the standard town only).  The
    faces ask before the first turn, so the refusal comes when the game is set up, not at a
    seat's first decision."""
    for p in policies:
        check = getattr(p, "check_world", None)
        if callable(check):
            check(world)
