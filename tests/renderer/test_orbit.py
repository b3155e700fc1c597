"""The turntable: frames from all around, written as an animated GIF or an MP4."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import renderer
from renderer.orbit import orbit, save_animation
from simd import Machine
from simd.cli import main
from tests.renderer.meshes import grid_mesh


@pytest.fixture
def mesh():
    verts, faces = grid_mesh(6, 6, -1, -1, 1, 1, jitter=0.2, seed=4)
    verts[:, 2] = 0.3 * np.sin(3 * verts[:, 0])  # a wavy sheet: every view differs
    return verts, faces


def test_orbit_frames_are_the_views_of_a_full_turn(mesh):
    frames = list(
        orbit(
            mesh,
            4,
            azimuth=10,
            elevation=20,
            size=40,
            loop="expand",
            machine=Machine(pes=16, backend="numpy"),
        )
    )
    assert len(frames) == 4
    for k, frame in enumerate(frames):
        alone = renderer.render(
            mesh,
            view=(10 + 90 * k, 20),
            size=40,
            loop="expand",
            machine=Machine(pes=16, backend="numpy"),
        )
        np.testing.assert_array_equal(frame.image, alone.image)
        np.testing.assert_array_equal(frame.mvp, alone.mvp)
    assert not np.array_equal(frames[0].image, frames[1].image)


@pytest.mark.parametrize("frames", [0, -2, 2.5, True])
def test_orbit_refuses_bad_frame_counts(mesh, frames):
    with pytest.raises(ValueError, match="frames"):
        next(orbit(mesh, frames))


def _decode_mp4(path, width, height):
    """The frames of a video, decoded by ffmpeg itself (the binary imageio-ffmpeg ships)."""
    import subprocess

    import imageio_ffmpeg

    raw = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-v",
            "error",
            "-i",
            str(path),
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ],
        capture_output=True,
        check=True,
    ).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width, 3)


def test_gif_and_mp4_hold_every_frame(tmp_path):
    images = [np.zeros((16, 24, 3), dtype=np.uint8) for _ in range(3)]
    for k, im in enumerate(images):
        im[:, 8 * k : 8 * k + 8] = 255  # a white bar moving right
    save_animation(images, tmp_path / "a.gif", fps=5)
    with Image.open(tmp_path / "a.gif") as gif:
        assert gif.n_frames == 3 and gif.size == (24, 16) and gif.info["duration"] == 200
        for k in range(3):
            gif.seek(k)
            np.testing.assert_array_equal(np.asarray(gif.convert("RGB")), images[k])
    save_animation(images, tmp_path / "a.mp4", fps=5)
    video = _decode_mp4(tmp_path / "a.mp4", 24, 16)
    assert len(video) == 3
    for k in range(3):  # lossy: the bar is where it should be
        bright = video[k].mean(axis=(0, 2)) > 128
        assert bright[8 * k + 4] and bright.sum() in range(6, 11)


def test_render_orbit_command_writes_the_turntable(tmp_path, capsys, mesh):
    import trimesh

    path = tmp_path / "sheet.ply"
    trimesh.Trimesh(*mesh, process=False).export(path)
    out = tmp_path / "turn.gif"
    args = [
        "render",
        "--mesh",
        str(path),
        "--orbit",
        "3",
        "--view",
        "0",
        "15",
        "--size",
        "32",
        "--loop",
        "expand",
        "--backend",
        "numpy",
        "--pes",
        "16",
        "-o",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "3 frames in" in text and "frames/s" in text and f"wrote {out}" in text
    with Image.open(out) as gif:
        assert gif.n_frames == 3 and gif.size == (32, 32)
        for k in range(3):
            frame = renderer.render(
                renderer.load_mesh(path),
                view=(120 * k, 15),
                size=32,
                loop="expand",
                machine=Machine(pes=16, backend="numpy"),
            )
            gif.seek(k)
            drawn = np.asarray(gif.convert("RGB")).any(axis=2)
            np.testing.assert_array_equal(drawn, frame.image.any(axis=2))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "turn.png"], "unknown format '.png'; use .gif or .mp4"),
        (["-o", "no/such/folder/turn.gif"], "does not exist"),
        (["--compare"], "takes no --compare"),
        (["--orbit", "0"], "at least 1 frame"),
        # ffmpeg refused it and an empty turn.mp4 was reported written
        (["-o", "turn.mp4", "--size", "9"], "turn.mp4: an MP4 video needs an even width and"),
        (["-o", "turn.mp4", "--size", "64x33"], "height, got 64x33; give an even --size, or"),
    ],
)
def test_render_orbit_refuses_bad_options_before_work(
    tmp_path, capsys, monkeypatch, extra, message
):
    monkeypatch.chdir(tmp_path)
    args = ["render", "--orbit", "2", "--dataset-size", "16", "--no-progress", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_save_animation_refuses_an_odd_mp4_and_writes_nothing(tmp_path):
    images = [np.zeros((9, 10, 3), np.uint8)] * 2
    with pytest.raises(ValueError, match="an MP4 video needs an even width and height, got 10x9"):
        save_animation(images, tmp_path / "a.mp4")
    assert list(tmp_path.iterdir()) == []
    save_animation(images, tmp_path / "a.gif")  # a GIF takes any size
