"""The viewer in the browser: ``simd-emu view`` and :func:`renderer.view`.

A local web server renders the views a page asks for on the emulated machine and streams
the frames to it, with every frame's numbers: the triangles, each stage's time on the wall
clock and the model clock, each balanced loop's iterations with and without balancing, the
balancer's decisions, and the work per processor before and after balancing. The page
turns the surface (drag), zooms (wheel), resets (double-click), moves a volume's level,
and switches the loop form (the picture stays, the numbers change), the colour map and
the light.

Modules, from the page down:

``static/``
    The page (``index.html``, ``viewer.js``, ``viewer.css``), package data: nothing comes
    from another site.
``app``
    The web application (Starlette): the page, its files and one websocket per page,
    every request checked for the viewer's token.
``serving``
    The socket bound first (a port in use is one line), uvicorn in the foreground or on a
    thread, the page's address.
``sessions``
    The viewer's state while it serves: frames made one at a time on a thread of their
    own, one session per page holding only its newest request.
``frames``
    A request rendered (:func:`renderer.render` of a :class:`renderer.Scene`) and sent as
    one message: a JSON header with the panel's numbers, then the PNG.
``workchart``
    The work per processor of each balanced loop, before and after balancing.
``requests``
    What the page may ask for, checked: views of what the viewer was started with, never
    a path.
``source``
    What is shown: one mesh, or a volume's isosurfaces made per level on the machine.
``ranks``
    Under MPI: rank 0 serves and sends each request to the other ranks, which render
    their share of every frame.
``notebook``
    :func:`renderer.view`: the viewer served from a thread, shown in a notebook cell.

Only ``app``, ``serving`` and ``notebook`` (when it serves) import the web packages of the
``view`` extra; the rest is the renderer's own code and runs without them (the
benchmark's frame timings use it so).
"""
