"""Jobs, demos, benchmarks and pictures around the extension (never shipped in its zip).

Entry scripts, each run as ``python scripts/<name>.py`` (the only modules here that put the
repository on ``sys.path``, once each, and that nothing imports):

* jobs: ``main.py`` (bake every demo, contact sheets, tables), ``bake.py`` (headless batch
  bakes, local or on Dask), ``sweep.py`` (parameter sweeps), ``build_extension.py`` (the zip),
  ``make_coastlines.py`` (core/data/coastlines.json);
* ``build_demos.py``: every file of demo_blends/, from the builders in ``demos/``;
* ``bench.py``: every benchmark section, from the modules in ``benchmarks/``;
* ``pictures/render_readme_images.py`` and ``pictures/render_getting_started.py``: the
  documentation's pictures (docs/images/).

Modules they import (as ``scripts.<module>``):

* ``blender_kit.py``: the Blender toolkit the scripts and the Blender tests share (the one
  zip install, a sandboxed session, scene building, rendering, baking an open file);
* ``demos/``: one builder per demo file (the core's mechanisms share one, the linkages
  another), and ``demos/common.py``;
* ``benchmarks/``: one module per section of bench.py, and ``benchmarks/common.py``;
* ``pictures/common.py``: trails, titled sheets and animations of the picture scripts and the
  main job.
"""
