"""docs/testing-connectors.md's recipes as a connector's suite runs them: through the pytest plugin,
every test `@pytest.mark.hermes_audit`. The careful recipes pass; the deliberately wrong `audit-*`
ones with an error finding fail, their findings in the report (issue 21: "a suite of the project's
own recipes run with `@pytest.mark.hermes_audit` is clean")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.test_recipes import deliberately_wrong, recipes
from tests.testkit.support import outcomes, run_pytest

pytestmark = pytest.mark.slow

# The plugin's servers always have a key: a `--no-auth` recipe is audited by tests/api/test_recipes.py only.
SUITE = '''
import hashlib, json, tempfile
from pathlib import Path

import pytest

from tests.api.test_recipes import recipes, run_recipe

SCRIPTS = Path(tempfile.mkdtemp(prefix="recipe-scripts-"))
RECIPES = [(n, r) for n, r in recipes() if "--no-auth" not in r.get("server", ())]


def options(recipe):
    """make_hermes changes for a recipe: its serve flags, and its agent script as a file."""
    changes = {"flags": list(recipe.get("server", ()))}
    if "script" in recipe:
        text = json.dumps(recipe["script"])
        path = SCRIPTS / (hashlib.sha256(text.encode()).hexdigest()[:16] + ".json")
        path.write_text(text)
        changes["agent_script"] = str(path)
    return changes


@pytest.mark.hermes_audit
@pytest.mark.parametrize("name, recipe", RECIPES, ids=[n for n, _ in RECIPES])
def test_recipe(make_hermes, name, recipe):
    server = make_hermes(**options(recipe))
    run_recipe(server.http, name, recipe, server.api_key)
'''


def test_the_recipes_audited_by_the_plugin(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_recipes_audited.py": SUITE}, "-q", timeout=300)
    # outcomes() keys by test name, here "test_recipe[<recipe>]"
    found = {name.removeprefix("test_recipe[").removesuffix("]"): result for name, result in outcomes(run.output).items()}
    expected = {name: "PASSED" for name, recipe in recipes() if "--no-auth" not in recipe.get("server", ())}
    errors = ("audit-unsafe-replay", "audit-stale-session-id", "audit-fork-retry", "audit-control-character-id",
              "audit-retry-after")
    for name in errors:
        assert deliberately_wrong(name)
        expected[name] = "FAILED"
    assert found == expected, run.output
    for name in errors:  # each failure names its rule, in the audit's words
        rule = {"audit-fork-retry": "fork-retry-without-inspection", "audit-retry-after": "retry-after-ignored"}.get(
            name, name.removeprefix("audit-"))
        assert f"{rule} (error) at #" in run.output, rule
    assert "hermes-server audit" in run.output
