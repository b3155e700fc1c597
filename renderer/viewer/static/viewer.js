// simd-emu view: the page. It asks the server for views over one websocket and draws the
// frames the server renders on the emulated machine, with their numbers.
//
// One request at a time is in flight: while a frame is being made, the newest wanted view
// waits here (older ones are dropped), and it is sent when the frame arrives, so the
// server renders no faster than this page takes its frames. While the view is dragged
// (or the wheel turned, or the level slid) the page asks for previews, smaller frames it
// stretches over the picture; when the movement stops it asks for the full frame.
//
// window.simdView holds the last frame's header (its numbers, as the server sent them)
// and its PNG file's bytes, for tests and the curious.
"use strict";

(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const canvas = $("frame");
  const context = canvas.getContext("2d");
  const STILL_AFTER_MS = 180; // a wheel or slider at rest this long gets its full frame

  const shown = { header: null, png: null, frames: 0, previews: 0, errors: [] };
  window.simdView = shown;

  let hello = null; // what the server shows, and the choices
  let state = null; // the view as the page wants it
  let pending = null; // the newest request not sent yet
  let inFlight = false;
  let nextId = 1;
  let stillTimer = null;
  const arrivals = [];

  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws?token=${encodeURIComponent(token)}`);
  socket.binaryType = "arraybuffer";
  socket.onmessage = (event) => {
    if (typeof event.data === "string") onText(JSON.parse(event.data));
    else onFrame(event.data);
  };
  socket.onclose = () => say("the viewer has stopped: start simd-emu view again", true);

  // ------------------------------------------------------------------ requests

  function want(changes, preview) {
    state = { ...state, ...changes };
    pending = { ...state, preview: Boolean(preview) };
    pump();
  }

  function wantStill() {
    clearTimeout(stillTimer);
    stillTimer = null;
    want({}, false);
  }

  function wantPreviewThenStill(changes) {
    want(changes, true);
    clearTimeout(stillTimer);
    stillTimer = setTimeout(wantStill, STILL_AFTER_MS);
  }

  function pump() {
    if (inFlight || pending === null || socket.readyState !== WebSocket.OPEN) return;
    const message = { ...pending, id: nextId++ };
    pending = null;
    inFlight = true;
    socket.send(JSON.stringify(message));
  }

  // ------------------------------------------------------------------ messages

  function onText(message) {
    if (message.type === "hello") {
      hello = message;
      state = { ...message.initial };
      delete state.preview;
      delete state.id;
      buildControls();
      want({}, false);
    } else if (message.type === "error") {
      shown.errors.push(message.message);
      say(message.message, true);
      inFlight = false;
      pump();
    }
  }

  async function onFrame(buffer) {
    const length = new DataView(buffer).getUint32(0);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
    const png = new Uint8Array(buffer, 4 + length);
    const bitmap = await createImageBitmap(new Blob([png], { type: "image/png" }), {
      premultiplyAlpha: "none",
      colorSpaceConversion: "none",
    });
    context.imageSmoothingEnabled = header.preview;
    context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    bitmap.close();
    shown.header = header;
    shown.png = png;
    if (header.preview) shown.previews += 1;
    else shown.frames += 1;
    inFlight = false;
    pump();
    showNumbers(header);
    say(header.preview ? "moving: a smaller frame" : "", false);
  }

  function say(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  // ------------------------------------------------------------------ controls

  function options(select, values, labels) {
    select.replaceChildren(
      ...values.map((value, i) => new Option(labels ? labels[i] : value, value)),
    );
  }

  function buildControls() {
    const [width, height] = hello.size;
    canvas.width = width;
    canvas.height = height;
    $("title").textContent = hello.name;
    const ranks = hello.ranks > 1 ? ` over ${hello.ranks} MPI ranks` : "";
    $("machine").textContent =
      `${hello.pes} processors, ${hello.backend} backend${ranks}; ${width} x ${height} frames`;
    const choices = hello.choices;
    options($("loop"), choices.loops);
    options($("shading"), choices.shadings);
    options($("colormap"), ["", ...choices.colormaps], ["the surface's colour", ...choices.colormaps]);
    options($("colour-by"), choices.colour_by);
    if (choices.levels) buildLevel(choices.levels);
    showState();
    $("loop").onchange = (e) => want({ loop: e.target.value }, false);
    $("shading").onchange = (e) => want({ shading: e.target.value }, false);
    $("colormap").onchange = (e) => want({ colormap: e.target.value || null }, false);
    $("colour-by").onchange = (e) => want({ colour_by: e.target.value }, false);
    for (const axis of ["x", "y", "z"]) $(`light-${axis}`).onchange = changeLight;
  }

  function buildLevel([low, high]) {
    const slider = $("level");
    const step = (high - low) / 1000;
    slider.min = low + step; // a surface needs values below the level
    slider.max = high;
    slider.step = step;
    $("level-row").hidden = false;
    slider.oninput = () => {
      showLevel(Number(slider.value));
      wantPreviewThenStill({ level: Number(slider.value) });
    };
    slider.onchange = () => {
      state.level = Number(slider.value);
      wantStill();
    };
  }

  function showState() {
    $("loop").value = state.loop;
    $("shading").value = state.shading;
    $("colormap").value = state.colormap || "";
    $("colour-by").value = state.colour_by;
    ["x", "y", "z"].forEach((axis, i) => ($(`light-${axis}`).value = state.light[i]));
    if (state.level !== null) {
      $("level").value = state.level;
      showLevel(state.level);
    }
  }

  function showLevel(level) {
    $("level-value").textContent = Number(level.toPrecision(5)).toString();
  }

  function changeLight() {
    const light = ["x", "y", "z"].map((axis) => Number($(`light-${axis}`).value));
    if (light.every(Number.isFinite) && light.some((v) => v !== 0)) want({ light }, false);
  }

  // ------------------------------------------------------------------ the mouse

  let drag = null;
  canvas.addEventListener("pointerdown", (e) => {
    if (!state || e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, azimuth: state.azimuth, elevation: state.elevation };
    canvas.setPointerCapture(e.pointerId);
    canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const azimuth = drag.azimuth - 0.5 * (e.clientX - drag.x);
    const elevation = Math.max(-90, Math.min(90, drag.elevation + 0.5 * (e.clientY - drag.y)));
    want({ azimuth, elevation }, true);
  });
  const endDrag = () => {
    if (!drag) return;
    drag = null;
    canvas.classList.remove("dragging");
    wantStill();
  };
  canvas.addEventListener("pointerup", endDrag);
  canvas.addEventListener("pointercancel", endDrag);
  canvas.addEventListener(
    "wheel",
    (e) => {
      if (!state) return;
      e.preventDefault();
      const [low, high] = hello.choices.magnification;
      const zoomed = state.magnification * Math.exp(-0.002 * e.deltaY);
      wantPreviewThenStill({ magnification: Math.max(low, Math.min(high, zoomed)) });
    },
    { passive: false },
  );
  canvas.addEventListener("dblclick", () => {
    if (!state) return;
    const { azimuth, elevation, magnification } = hello.initial;
    want({ azimuth, elevation, magnification }, false);
  });

  // ------------------------------------------------------------------ the panel

  const ms = (seconds) => (seconds === null ? "–" : (1000 * seconds).toFixed(2));

  function cell(text, field, value) {
    const td = document.createElement("td");
    td.textContent = text;
    if (field) {
      td.dataset.field = field;
      td.dataset.value = String(value);
    }
    return td;
  }

  function row(key, cells) {
    const tr = document.createElement("tr");
    tr.dataset.key = key;
    tr.append(...cells);
    return tr;
  }

  function showNumbers(header) {
    const numbers = header.panel;
    const c = numbers.counts;
    $("counts").tBodies[0].replaceChildren(
      ...[
        ["triangles", c.triangles],
        ["drawn", c.drawn],
        ["spans", c.spans],
        ["fragments", c.fragments],
        ["pixels covered", c.pixels],
      ].map(([name, value]) =>
        row(name, [cell(name), cell(value.toLocaleString("en"), "count", value)]),
      ),
    );
    const f = numbers.frame;
    $("stages").tBodies[0].replaceChildren(
      ...numbers.stages.map((s) =>
        row(s.name, [cell(s.name), cell(ms(s.wall), "wall", s.wall), cell(ms(s.model), "model", s.model)]),
      ),
      row("frame", [cell("frame"), cell(ms(f.wall), "wall", f.wall), cell(ms(f.model), "model", f.model)]),
    );
    $("loops").tBodies[0].replaceChildren(
      ...numbers.loops.map((l) =>
        row(l.name, [
          cell(l.name, "form", l.form),
          cell(String(l.iterations), "iterations", l.iterations),
          cell(String(l.without), "without", l.without),
          cell(String(l.decisions), "decisions", l.decisions),
        ]),
      ),
    );
    drawCharts(header.charts);
    showRate(header);
  }

  function showRate(header) {
    const now = performance.now();
    arrivals.push(now);
    while (arrivals.length && arrivals[0] < now - 2000) arrivals.shift();
    const rate =
      arrivals.length > 1
        ? `${((arrivals.length - 1) / ((now - arrivals[0]) / 1000)).toFixed(1)} frames/s · `
        : "";
    const s = header.server;
    $("rate").textContent =
      `${rate}last ${header.preview ? "preview" : "frame"} ` +
      `${header.size[0]} x ${header.size[1]}: rendered in ${ms(s.render)} ms, ` +
      `PNG ${ms(s.png)} ms`;
  }

  // Each loop: a row of bars before balancing and one after, on one scale (the loop's
  // busiest processor before); a bar is the busiest of its processors.
  function drawCharts(charts) {
    const work = $("work");
    const g = work.getContext("2d");
    const style = getComputedStyle(document.documentElement);
    const colours = { before: style.getPropertyValue("--before"), after: style.getPropertyValue("--after") };
    const rowHeight = 38;
    const block = 2 * rowHeight + 34;
    work.height = Math.max(1, charts.length * block);
    g.clearRect(0, 0, work.width, work.height);
    g.font = "11px system-ui, sans-serif";
    charts.forEach((chart, i) => {
      const top = i * block;
      g.fillStyle = style.getPropertyValue("--ink");
      const what = chart.loop === "ranks" ? "work per MPI rank" : `${chart.loop} (${chart.form})`;
      g.fillText(what, 2, top + 12);
      const scale = Math.max(1, chart.max_before, chart.max_after || 0);
      drawRow(g, chart.before, top + 18, rowHeight, scale, colours.before, `before: busiest ${chart.max_before}`);
      if (chart.after) {
        drawRow(g, chart.after, top + 20 + rowHeight, rowHeight, scale, colours.after, `after: busiest ${chart.max_after}`);
      }
    });
    $("work-notes").replaceChildren(
      ...charts.map((chart) => {
        const li = document.createElement("li");
        li.textContent = `${chart.loop}: ${chart.note}` +
          (chart.per_bar > 1 ? ` (a bar: the busiest of ${chart.per_bar} processors)` : "");
        return li;
      }),
    );
  }

  function drawRow(g, values, top, height, scale, colour, label) {
    const width = g.canvas.width;
    const bar = width / values.length;
    g.fillStyle = colour;
    values.forEach((v, i) => {
      const h = (height - 12) * (v / scale);
      g.fillRect(i * bar, top + height - h, Math.max(1, bar - (bar > 3 ? 1 : 0)), h);
    });
    g.fillStyle = "#e8e6e1";
    g.fillText(label, 2, top + 10);
  }
})();
