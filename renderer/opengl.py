"""Render a mesh with a real OpenGL implementation (moderngl, headless EGL) for comparison.

Used by ``tests/renderer/test_opengl.py`` and ``bench/opengl_agreement.py`` to check the
emulated renderer against Mesa's llvmpipe: the same mesh, the same ``Frame.mvp``, viewport
``(0, 0, W, H)``, depth range ``(0, 1)``, ``GL_LESS`` depth test, no culling. The fragment
shader writes ``gl_PrimitiveID + 1`` (the face index) into a float colour buffer, so the
comparison covers coverage, the visible face and depth.

Headless contexts need EGL and Mesa's drivers; on Debian/Ubuntu:
``apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from renderer.scene.mesh import as_mesh

__all__ = ["GLUnavailable", "GLFrame", "gl_context", "render_gl", "compare"]


class GLUnavailable(RuntimeError):
    """No OpenGL context could be created (no moderngl, EGL or Mesa)."""


_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
void main() { gl_Position = mvp * vec4(in_pos, 1.0); }
"""
_FS = """
#version 330
out float face;
void main() { face = float(gl_PrimitiveID + 1); }
"""


@dataclass
class GLFrame:
    """OpenGL's result: ``face`` (H, W) int64 (-1 where nothing), ``depth`` (H, W) float32
    (1.0 where nothing), row 0 at the top; ``info`` the GL renderer strings."""

    face: np.ndarray
    depth: np.ndarray
    info: dict

    @property
    def coverage(self) -> np.ndarray:
        return self.face >= 0


_CTX: Any = None


def gl_context() -> Any:
    """A shared headless moderngl context (EGL backend, for example Mesa's llvmpipe).

    Raises
    ------
    GLUnavailable
        With the reason, when moderngl is missing or no context can be made.
    """
    global _CTX
    if _CTX is not None:
        return _CTX
    try:
        import moderngl
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise GLUnavailable(
            f"moderngl is not installed ({err}): pip install moderngl, or 'simd-emu[test]'"
        ) from err
    errors = []
    for kwargs in ({"backend": "egl"}, {}):
        try:
            _CTX = moderngl.create_standalone_context(require=330, **kwargs)
            return _CTX
        except Exception as err:  # noqa: BLE001 - any failure means "no GL here"
            errors.append(f"{kwargs or 'default'}: {err}")
    raise GLUnavailable(
        "no headless OpenGL 3.3 context (" + "; ".join(errors) + "); install EGL and Mesa, "
        "e.g. apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1"
    )


def render_gl(mesh: Any, mvp: np.ndarray, size: tuple[int, int]) -> GLFrame:
    """Draw ``mesh`` with OpenGL using ``mvp`` into a ``size = (W, H)`` framebuffer object.

    Returns
    -------
    GLFrame
    """
    mesh = as_mesh(mesh)
    width, height = size
    ctx = gl_context()
    prog = ctx.program(vertex_shader=_VS, fragment_shader=_FS)
    prog["mvp"].write(np.asarray(mvp, dtype="f4").T.copy().tobytes())  # column-major
    vbo = ctx.buffer(mesh.vertices.astype("f4").tobytes())
    ibo = ctx.buffer(mesh.faces.astype("u4").tobytes())
    vao = ctx.vertex_array(prog, [(vbo, "3f", "in_pos")], index_buffer=ibo, index_element_size=4)
    colour = ctx.texture((width, height), 1, dtype="f4")
    depth = ctx.depth_texture((width, height))
    fbo = ctx.framebuffer(color_attachments=[colour], depth_attachment=depth)
    try:
        fbo.use()
        ctx.viewport = (0, 0, width, height)
        ctx.disable(ctx.CULL_FACE | ctx.BLEND)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.depth_func = "<"
        fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        vao.render()
        ctx.finish()
        ids = np.frombuffer(fbo.read(components=1, dtype="f4"), dtype="f4")
        dep = np.frombuffer(fbo.read(components=1, attachment=-1, dtype="f4"), dtype="f4")
    finally:
        for obj in (fbo, colour, depth, vao, ibo, vbo, prog):
            obj.release()
    face = ids.reshape(height, width)[::-1].astype(np.int64) - 1
    dep = np.ascontiguousarray(dep.reshape(height, width)[::-1])
    return GLFrame(face=np.ascontiguousarray(face), depth=dep, info=dict(ctx.info))


def compare(frame: Any, gl: GLFrame) -> dict:
    """Agreement of a :class:`renderer.Frame` with OpenGL's result.

    Returns
    -------
    dict
        ``covered`` pixels covered by either, ``coverage_diff`` pixels covered by exactly
        one, ``coverage_diff_fraction`` = coverage_diff / covered, ``face_diff_fraction``
        the fraction of pixels covered by both that show different faces,
        ``max_depth_diff`` the largest depth difference on pixels covered by both and
        ``max_depth_diff_same_face`` the same where both show the same face.
    """
    ours, theirs = frame.face >= 0, gl.face >= 0
    covered = int((ours | theirs).sum())
    diff = int((ours ^ theirs).sum())
    both = ours & theirs
    nboth = int(both.sum())
    same = both & (frame.face == gl.face)
    face_diff = nboth - int(same.sum())
    delta = np.abs(frame.depth.astype(np.float64) - gl.depth.astype(np.float64))
    ddiff = float(delta[both].max()) if nboth else 0.0
    ddiff_same = float(delta[same].max()) if same.any() else 0.0
    return {
        "covered": covered,
        "coverage_diff": diff,
        "coverage_diff_fraction": diff / covered if covered else 0.0,
        "both": nboth,
        "face_diff": face_diff,
        "face_diff_fraction": face_diff / nboth if nboth else 0.0,
        "max_depth_diff": ddiff,
        "max_depth_diff_same_face": ddiff_same,
        "only_ours": int((ours & ~theirs).sum()),
        "only_gl": int((theirs & ~ours).sum()),
    }
