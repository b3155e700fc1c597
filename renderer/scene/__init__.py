"""What is rendered, and from where: triangle meshes (:mod:`~renderer.scene.mesh`: checks,
normals, mesh files), the camera and its views (:mod:`~renderer.scene.camera`), and a mesh
prepared once on a machine's device for many frames (:mod:`~renderer.scene.prepared`,
:class:`renderer.Scene`).
"""
