"""The project file's ``search`` section: read, written back, and every bad field named with its file, path, line
and fix (issue 29)."""
from __future__ import annotations

import pytest
import yaml

from nnconsole.engine.check.project_file import loads_valid_project
from nnconsole.engine.project.codec import project_to_dict
from nnconsole.engine.project.errors import ProjectError
from nnconsole import templates as project_templates

TEMPLATE = project_templates.template_path("digits_search") / "project.yaml"


def _text_with(search: dict) -> str:
    data = yaml.safe_load(TEMPLATE.read_text())
    data["search"] = search
    return yaml.safe_dump(data, sort_keys=False)


def _problems(search: dict) -> list:
    with pytest.raises(ProjectError) as caught:
        loads_valid_project(_text_with(search), file="p.yaml", check_datasets=False)
    return caught.value.problems


def test_the_template_search_section_loads_and_round_trips():
    project = loads_valid_project(TEMPLATE.read_text(), file=str(TEMPLATE), check_datasets=False)
    assert [p.target for p in project.search.params] == ["optimizer.learning_rate", "config.batch_size",
                                                         "layers.fc1.out_shape"]
    assert project_to_dict(project)["search"]["params"][0]["kind"] == "log_float"
    project.search = None
    assert "search" not in project_to_dict(project)  # a project without a search is written as before


@pytest.mark.parametrize("search,path,words", [
    ({"params": [{"target": "optimizer.learnig_rate", "kind": "log_float", "low": 1e-5, "high": 1}]},
     "search.params[0].target", "not a searchable setting"),
    ({"params": [{"target": "layers.fc9.out_shape", "kind": "int", "low": 8, "high": 64}]},
     "search.params[0].target", "no layer 'fc9'"),
    ({"params": [{"target": "layers.fc1.outmaps", "kind": "int", "low": 8, "high": 64}]},
     "search.params[0].target", "no property 'outmaps'"),
    ({"params": [{"target": "optimizer.learning_rate", "kind": "log_float", "low": 0, "high": 1}]},
     "search.params[0].low", "log-uniform"),
    ({"params": [{"target": "optimizer.learning_rate", "kind": "float", "low": 0.1, "high": 0.01}]},
     "search.params[0].high", "must be above low"),
    ({"params": [{"target": "optimizer.learning_rate", "kind": "gaussian", "low": 0.1, "high": 1}]},
     "search.params[0].kind", "unknown kind"),
    ({"params": [{"target": "config.batch_size", "kind": "float", "low": 8, "high": 64}]},
     "search.params[0].kind", "whole numbers"),
    ({"params": [{"target": "config.batch_size", "kind": "choice", "choices": [16, 0]}]},
     "search.params[0].choices[1]", "outside"),
    ({"params": [{"target": "optimizer.solver", "kind": "choice", "choices": ["Adam", "Adamm"]}]},
     "search.params[0].choices[1]", "'Adamm'"),
    ({"params": [{"target": "optimizer.solver", "kind": "choice", "choices": []}]},
     "search.params[0].choices", "at least one"),
    ({"params": []}, "search.params", "varies nothing"),
    ({"structure": True, "objectives": ["error", "latency"], "pruner": "none"}, "search.objectives[1]",
     "unknown objective"),
    ({"structure": True, "objectives": ["error", "multiply_adds"]}, "search.pruner", "single objective"),
    ({"structure": True, "sampler": "cmaes"}, "search.sampler", "unknown sampler"),
    ({"structure": True, "pruner": "hyperband"}, "search.pruner", "unknown pruner"),
    ({"structure": True, "trials": 0}, "search.trials", "between 1"),
    ({"structure": True, "policy": "mine.ini"}, "search.policy", "no policy file"),
    ({"structure": True, "multiply_adds_min": 5000, "multiply_adds_max": 100}, "search.multiply_adds_min",
     "above multiply_adds_max"),
    ({"structure": True, "timeout_minutes": -1}, "search.timeout_minutes", ">= 0"),
    ({"structure": True, "trails": 3}, "search.trails", "unknown key"),
])
def test_a_bad_search_field_is_named_with_file_line_and_fix(search, path, words):
    problems = _problems(search)
    found = [p for p in problems if p.path == path]
    assert found, [str(p) for p in problems]
    assert words in found[0].message
    assert found[0].file == "p.yaml" and found[0].line and found[0].fix
