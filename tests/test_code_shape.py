"""The shape of the code: functions short enough to read and modules of a readable size
(ruff's complexity rules and the import contracts, no cycle inside a package included,
check the rest)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernels", "simd", "renderer", "diffusion", "mimd")
MAX_FUNCTION_LINES = 100  # docstring excluded
MAX_MODULE_LINES = 600


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _function_lines(node: ast.AST) -> int:
    lines = node.end_lineno - node.lineno + 1
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            lines -= body[0].end_lineno - body[0].lineno + 1
    return lines


def test_functions_are_short_enough_to_read():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _function_lines(node)
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "functions over 100 lines (docstring excluded):\n" + "\n".join(long)


def test_modules_have_one_job_and_a_readable_size():
    big = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not big, "modules over 600 lines:\n" + "\n".join(big)


def test_the_shape_check_finds_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES + 1))
    tree = ast.parse(f'def f():\n    """Doc."""\n{body}\n')
    assert _function_lines(tree.body[0]) == MAX_FUNCTION_LINES + 2  # with its def line
