// The corenoise report page's script. It reads the report's JSON from the
// script element #corenoise-report and draws one of two pages, told apart by
// the JSON's "schema": the sweep's ("corenoise-sweep/1", docs/sweep.md) or
// the job's ("corenoise-job/1"). docs/report.md says how to read both.
//
// Rules that keep a hostile hostname, cause or command harmless: report
// text enters the page only through text nodes (el() below) or canvas
// fillText, never as markup; class names come from fixed lists, never from
// the report. Heatmaps are canvases filled through ImageData, so a
// 3,840 × 1,000 map is one typed array, not millions of elements.
//
// For tests and measurements: the script sets the body's data-rendered to
// "ok" when every section is drawn (or "error: …", with a visible error
// box), the times in data-parse-ms, data-script-ms and data-render-ms (from
// navigation start), and, for a URL fragment #cell=A,B;C,D…, hovers each of
// those heatmap cells (sweep: node index, CPU; job: rank, column) and lists
// what the hover said, with the colour drawn there, in the list #cell-probe.
// On the job's page #scale=max starts the lateness colours at the maximum.
"use strict";

(function () {
  const scriptStarted = performance.now();

  // ------------------------------------------------------------------ DOM

  // el("td", { className: "num" }, "1.23", otherNode, [more]): children that
  // are strings or numbers become text nodes, so they are never parsed.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === "innerHTML" || key === "outerHTML") throw new Error("el(): no markup");
      if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "style") Object.assign(node.style, value);
      else if (key in node) node[key] = value;
      else node.setAttribute(key, value);
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (typeof child === "string" || typeof child === "number")
        node.appendChild(document.createTextNode(String(child)));
      else node.appendChild(child);
    }
  }

  function section(id, title, ...children) {
    return el("section", { id }, el("h2", null, title), children);
  }

  function note(text, className) {
    return el("p", { className: "note" + (className ? " " + className : "") }, text);
  }

  function table(headers, rows) {
    return el(
      "table",
      { className: "data" },
      el("thead", null, el("tr", null, headers.map((h) => el("th", null, h)))),
      el("tbody", null, rows),
    );
  }

  function num(text, props) {
    return el("td", Object.assign({ className: "num" }, props || {}), text);
  }

  // ------------------------------------------------------------ numbers

  const DASH = "–";  // a figure nothing measured (null in the JSON)

  function isNum(x) {
    return typeof x === "number" && Number.isFinite(x);
  }
  function fixed(x, digits) {
    return isNum(x) ? x.toFixed(digits) : DASH;
  }
  // Four significant digits without trailing zeros, like printf's %.4g.
  function general(x) {
    return isNum(x) ? String(Number(x.toPrecision(4))) : DASH;
  }
  function scaled(x, factor) {
    return isNum(x) ? x * factor : null;
  }
  function utcTime(unixSeconds) {
    if (!isNum(unixSeconds) || unixSeconds <= 0) return "unknown time";
    return new Date(unixSeconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // ------------------------------------------------------------- colours

  // ColorBrewer Reds and Blues: sequential, print- and colour-blind-safe,
  // white for "nothing wrong" so that a few bad cells stand out among
  // 128,000. Stops at fractions of the span, from white.
  const REDS = [
    [0.0, [0xff, 0xff, 0xff]],
    [0.1, [0xfe, 0xe0, 0xd2]],
    [0.2, [0xfc, 0xae, 0x91]],
    [0.4, [0xfb, 0x6a, 0x4a]],
    [0.6, [0xde, 0x2d, 0x26]],
    [1.0, [0x67, 0x00, 0x0d]],
  ];
  const BLUES = [
    [0.0, [0xff, 0xff, 0xff]],
    [0.5, [0xc6, 0xdb, 0xef]],
    [1.0, [0x21, 0x71, 0xb5]],
  ];
  // Slowdowns: white at 1.0, darkest red at ≥ 1.5 (so 1.05, the default
  // threshold, is the first visible pink), darkest blue at ≤ 0.8.
  const SLOWDOWN_RED_SPAN = 0.5;
  const SLOWDOWN_BLUE_SPAN = 0.2;
  const WHITE = [0xff, 0xff, 0xff];
  const GREY_SKIPPED = [0xbd, 0xbd, 0xbd];
  const GREY_NO_FIGURE = [0xe6, 0xe6, 0xe6];
  const HATCH_DARK = [0xdd, 0xdd, 0xdd];

  function ramp(stops, fraction) {
    const f = Math.min(1, Math.max(0, fraction));
    let i = 1;
    while (i + 1 < stops.length && f > stops[i][0]) ++i;
    const [a, from] = stops[i - 1];
    const [b, to] = stops[i];
    const t = (f - a) / (b - a);
    return from.map((x, k) => Math.round(x + (to[k] - x) * t));
  }

  function slowdownRgb(slowdown) {
    const s = isNum(slowdown) ? slowdown : 1;
    return s >= 1 ? ramp(REDS, (s - 1) / SLOWDOWN_RED_SPAN) : ramp(BLUES, (1 - s) / SLOWDOWN_BLUE_SPAN);
  }

  function cssRgb([r, g, b]) {
    return "rgb(" + r + ", " + g + ", " + b + ")";
  }
  function hex(rgb) {
    return "#" + rgb.map((x) => x.toString(16).padStart(2, "0")).join("");
  }
  function cssGradient(stops) {
    return "linear-gradient(to right, " + stops.map(([at, rgb]) => cssRgb(rgb) + " " + at * 100 + "%").join(", ") + ")";
  }

  // Text on a coloured background: black or white, whichever contrasts more
  // (WCAG relative luminance; the two contrasts are equal at 0.179). One
  // rule for letters on cells and figures in tables.
  function inkOn(rgb) {
    const linear = (c) => {
      const x = c / 255;
      return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    };
    const luminance = 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2]);
    return luminance < 0.179 ? "#fff" : "#000";
  }

  // ImageData as 32-bit pixels: one store per pixel instead of four.
  const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  function packed([r, g, b]) {
    return (LITTLE_ENDIAN ? (0xff << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 0xff) >>> 0;
  }

  // ------------------------------------------------------------- heatmap

  // A value colour() may return for a cell that does not exist (a node
  // without that CPU): drawn hatched.
  const HATCH = -1;
  const LABEL_FONT_PX = 10;
  // Chromium's largest canvas side, in pixels: a map larger than that
  // cannot be drawn at all.
  const MAX_CANVAS_SIDE = 32767;
  let tooltipElement = null;

  function tooltip() {
    if (!tooltipElement) {
      tooltipElement = el("div", { className: "tooltip", role: "tooltip" });
      document.body.appendChild(tooltipElement);
    }
    return tooltipElement;
  }

  // A rows × cols map on a canvas, with sticky axis labels and a hover
  // tooltip. o: rows, cols; cellW, cellH, gap (canvas pixels per cell and
  // between cells); scaleX, scaleY (CSS pixels per canvas pixel: a 1-pixel
  // cell shown larger, pixelated); colour(r, c) → packed colour or HATCH;
  // letter(r, c) → [text, ink] or null; hover(r, c) → text; rowLabel(r),
  // colLabel(c) → text or null (null: no label there); corner: the corner's
  // text; label: what the map shows, for screen readers.
  function heatmap(o) {
    const pitchX = o.cellW + o.gap;
    const pitchY = o.cellH + o.gap;
    const scaleX = o.scaleX || 1;
    const scaleY = o.scaleY || 1;
    if (o.cols * pitchX > MAX_CANVAS_SIDE || o.rows * pitchY > MAX_CANVAS_SIDE)
      throw new Error("a map of " + o.rows + " × " + o.cols + " cells is larger than a canvas can be (" + MAX_CANVAS_SIDE + " pixels a side)");
    const map = el("canvas", { className: "map", role: "img", "aria-label": o.label });
    map.width = o.cols * pitchX;
    map.height = o.rows * pitchY;
    map.style.width = map.width * scaleX + "px";
    map.style.height = map.height * scaleY + "px";
    map.dataset.rows = String(o.rows);
    map.dataset.columns = String(o.cols);
    const context = map.getContext("2d");
    function draw() {
      paint(context, o, pitchX, pitchY);
      if (!o.letter) return;
      context.font = "bold " + Math.max(8, o.cellH - 9) + "px monospace";
      context.textAlign = "center";
      context.textBaseline = "middle";
      for (let r = 0; r < o.rows; ++r)
        for (let c = 0; c < o.cols; ++c) {
          const letter = o.letter(r, c);
          if (!letter) continue;
          context.fillStyle = letter[1];
          context.fillText(letter[0], c * pitchX + o.cellW / 2, r * pitchY + o.cellH / 2 + 1);
        }
    }
    draw();

    const cssPitchX = pitchX * scaleX;
    const cssPitchY = pitchY * scaleY;
    // Row labels a pixel larger than their rows, down to 8 px: every node of
    // a compact sweep keeps its name; smaller rows are labelled sparsely.
    const rowFont = Math.min(LABEL_FONT_PX, Math.max(8, cssPitchY + 1));
    const rowLabels = axisLabels("row-labels", o.rows, cssPitchY, o.rowLabel, map.height * scaleY, true, rowFont);
    const colLabels = axisLabels("col-labels", o.cols, cssPitchX, o.colLabel, map.width * scaleX, false, LABEL_FONT_PX);
    const grid = el(
      "div",
      { className: "heatmap-grid" },
      el("div", { className: "corner" }, o.corner),
      colLabels,
      rowLabels,
      map,
    );

    function cellAt(clientX, clientY) {
      const rect = map.getBoundingClientRect();
      const x = ((clientX - rect.left) * map.width) / rect.width;
      const y = ((clientY - rect.top) * map.height) / rect.height;
      const c = Math.floor(x / pitchX);
      const r = Math.floor(y / pitchY);
      return r >= 0 && r < o.rows && c >= 0 && c < o.cols ? [r, c] : null;
    }
    const tip = tooltip();
    map.addEventListener("mousemove", (event) => {
      const cell = cellAt(event.clientX, event.clientY);
      if (!cell) {
        tip.style.display = "none";
        return;
      }
      tip.textContent = o.hover(cell[0], cell[1]);
      tip.style.display = "block";
      const width = tip.offsetWidth;
      tip.style.left = Math.max(0, Math.min(event.clientX + 14, window.innerWidth - width - 4)) + "px";
      tip.style.top = event.clientY + 14 + "px";
    });
    map.addEventListener("mouseleave", () => {
      tip.style.display = "none";
    });

    return {
      element: el("div", { className: "heatmap-scroll" }, grid),
      map,
      repaint: draw,  // after what colour() returns has changed
      // What a pointer over cell (r, c) sees: a real mousemove at the cell's
      // centre, through the same coordinate mapping as a hand on the mouse.
      hoverAt(r, c) {
        const rect = map.getBoundingClientRect();
        const clientX = rect.left + ((c * pitchX + o.cellW / 2) * rect.width) / map.width;
        const clientY = rect.top + ((r * pitchY + o.cellH / 2) * rect.height) / map.height;
        map.dispatchEvent(new MouseEvent("mousemove", { clientX, clientY, bubbles: true }));
        const text = tip.style.display === "none" ? "" : tip.textContent;
        tip.style.display = "none";
        return text;
      },
      // The colour drawn at the cell's top-left pixel (letters sit in the
      // middle), as #rrggbb.
      colourAt(r, c) {
        const pixel = context.getImageData(c * pitchX, r * pitchY, 1, 1).data;
        return hex([pixel[0], pixel[1], pixel[2]]);
      },
    };
  }

  function paint(context, o, pitchX, pitchY) {
    const width = o.cols * pitchX;
    const image = context.createImageData(width, o.rows * pitchY);
    const pixels = new Uint32Array(image.data.buffer);
    pixels.fill(packed(WHITE));  // the gaps between cells
    const light = packed(WHITE);
    const dark = packed(HATCH_DARK);
    if (pitchX === 1 && pitchY === 1) {
      // One pixel per cell (the job's map): the hot loop, kept plain.
      for (let r = 0, at = 0; r < o.rows; ++r)
        for (let c = 0; c < o.cols; ++c, ++at) {
          const colour = o.colour(r, c);
          pixels[at] = colour === HATCH ? dark : colour;
        }
    } else {
      for (let r = 0; r < o.rows; ++r)
        for (let c = 0; c < o.cols; ++c) {
          const colour = o.colour(r, c);
          for (let y = 0; y < o.cellH; ++y) {
            const start = (r * pitchY + y) * width + c * pitchX;
            if (colour !== HATCH) {
              pixels.fill(colour, start, start + o.cellW);
            } else {
              for (let x = 0; x < o.cellW; ++x) pixels[start + x] = (x + y) % 4 < 2 ? light : dark;
            }
          }
        }
    }
    context.putImageData(image, 0, 0);
  }

  // One axis's labels on a canvas of their own, sticky beside the map. A
  // label that would overlap the previous one is left out.
  function axisLabels(className, count, cssPitch, label, cssLength, vertical, fontPx) {
    const font = fontPx + "px system-ui, sans-serif";
    const canvas = el("canvas", { className });
    const context = canvas.getContext("2d");
    context.font = font;
    const texts = [];
    let widest = 0;
    if (label)
      for (let i = 0; i < count; ++i) {
        const text = label(i);
        if (text === null || text === undefined) continue;
        const width = context.measureText(text).width;
        texts.push([i, text, width]);
        widest = Math.max(widest, width);
      }
    canvas.width = vertical ? Math.ceil(widest) + 8 : Math.max(1, Math.ceil(cssLength));
    canvas.height = vertical ? Math.max(1, Math.ceil(cssLength)) : 14;
    context.font = font;  // resizing a canvas resets its context
    context.fillStyle = "#555";
    let free = -Infinity;
    for (const [i, text, width] of texts) {
      if (vertical) {
        const y = Math.max(fontPx / 2, (i + 0.5) * cssPitch);  // the first not cut off
        if (y < free) continue;
        context.textAlign = "right";
        context.textBaseline = "middle";
        context.fillText(text, canvas.width - 4, y);
        free = y + fontPx - 2;  // glyphs of a line sit within about fontPx − 2
      } else {
        const x = i * cssPitch;
        if (x < free) continue;
        context.textAlign = "left";
        context.textBaseline = "bottom";
        context.fillText(text, x, 13);
        free = x + width + 6;
      }
    }
    return canvas;
  }

  // ------------------------------------------------------- sweep report

  // The states, in the order docs/verdicts.md lists them; the unhealthy
  // ones are what sets exit 2 (probe/analysis.h is_unhealthy).
  const STATES = ["ok", "transient", "noisy", "throttled", "contended", "slow", "skipped"];
  const UNHEALTHY = new Set(["noisy", "throttled", "contended", "slow"]);
  // A letter on a large cell says why it is slow, so the picture reads
  // without hovering.
  const STATE_LETTER = { noisy: "N", throttled: "T", contended: "C", slow: "S" };
  // Above this many CPU columns the cells shrink and lose their letters, so
  // 128-core nodes still fit a laptop screen.
  const COMPACT_COLUMNS = 48;
  // The worst-nodes table lists this many nodes, plus every outlier beyond.
  const WORST_NODES = 20;
  // Units in the quantiles table: base units are unreadable at a glance.
  const METRIC_SCALE = @@CORENOISE_METRIC_SCALE@@;

  function stateBadge(state) {
    return el("span", { className: "state" + (STATES.includes(state) ? " st-" + state : "") }, String(state));
  }

  function slowdownCell(value) {
    if (!isNum(value)) return num(DASH);
    const rgb = slowdownRgb(value);
    return num(fixed(value, 3), { style: { background: cssRgb(rgb), color: inkOn(rgb) } });
  }

  function renderSweep(report, root) {
    const names = new Map();
    for (const node of report.nodes || []) names.set(node.index, node.name);
    const nodeName = (index) => names.get(index) || "node " + index;
    document.title =
      "corenoise report — " + report.node_count + " nodes, " + report.core_count + " cores, " +
      utcTime(report.started_unix_seconds);
    const map = guarded("heatmap", "Heatmap: nodes × cores", () => sweepHeatmap(report, nodeName));
    append(root, [
      sweepHeader(report),
      sweepPrediction(report.prediction),
      map.section,
      worstCores(report.worst || [], nodeName),
      worstNodes(report.nodes || []),
      quantiles(((report.cluster || {}).quantiles) || []),
      drain(report.drain_commands || []),
    ]);
    return map.probe;
  }

  function sweepHeader(report) {
    const nodes = report.nodes || [];
    const counts = new Map(STATES.map((s) => [s, 0]));
    let outliers = 0;
    for (const node of nodes) {
      for (const [state, n] of Object.entries(node.states || {})) counts.set(state, (counts.get(state) || 0) + n);
      if (node.outlier) ++outliers;
    }
    const s = report.settings || {};
    const t = s.thresholds || {};
    const failed = nodes.filter((node) => node.error);
    return el(
      "header",
      { id: "summary" },
      el(
        "h1",
        null,
        "corenoise report",
        el("span", { className: "status " + (report.healthy ? "healthy" : "unhealthy") }, report.healthy ? "healthy" : "unhealthy"),
      ),
      el(
        "p",
        { className: "meta" },
        el("b", null, String(report.node_count)), " nodes, ",
        el("b", null, String(report.core_count)), " cores probed, started ",
        utcTime(report.started_unix_seconds), ", took ", fixed(report.duration_seconds, 1),
        " s, layout ", String(report.layout || DASH), ", corenoise ", String(report.version),
      ),
      el(
        "p",
        { className: "meta", id: "state-counts" },
        [...counts].map(([state, n]) => [el("span", { className: "state" + (STATES.includes(state) ? " st-" + state : ""), dataset: { state } }, n + " " + state), " "]),
        "; ", el("b", null, String(outliers)), outliers === 1 ? " outlier node" : " outlier nodes",
      ),
      el(
        "p",
        { className: "meta" },
        "Settings: probes " + (s.probes || []).join(", ") + "; mode " + (s.modes || []).join(", ") + "; " +
          s.samples + " samples; matmul " + s.dtype + " n=" + s.matmul_size + " reps=" + s.reps +
          (s.isa_requested ? " " + s.isa_requested : "") + "; thresholds: clock " + fixed(t.throttled_clock_ratio, 2) +
          ", noise +" + fixed(t.noisy_excess_noise, 2) + ", slow " + fixed(t.slow_ratio, 2) +
          ", stream " + fixed(t.contended_stream_ratio, 2),
      ),
      failed.length
        ? el(
            "div",
            { className: "warning" },
            plural(failed.length, "node") + " contributed nothing:",
            el("ul", null, failed.map((node) => el("li", null, (node.name || "node " + node.index) + " (" + node.index + "): " + node.error))),
          )
        : null,
    );
  }

  function sweepPrediction(p) {
    const title = "Imbalance: what a bulk-synchronous job waits";
    if (!p) return section("prediction", title, note("No prediction: no expected slowdown was measured."));
    const card = (label, value, sub) =>
      el("div", { className: "card" }, el("div", { className: "label" }, label), el("div", { className: "big" }, value), el("div", { className: "label" }, sub));
    const share = isNum(p.step_seconds) && p.step_seconds > 0 ? (100 * p.wait_seconds) / (p.step_seconds * p.max_slowdown) : NaN;
    return section(
      "prediction",
      title,
      el(
        "div",
        { className: "cards" },
        card("wait per step on this allocation", fixed(scaled(p.wait_seconds, 1e3), 2) + " ms",
          "step " + fixed(scaled(p.step_seconds, 1e3), 2) + " ms × (max " + fixed(p.max_slowdown, 3) + " − median " + fixed(p.median_slowdown, 3) + ")"),
        card("share of each step spent waiting", fixed(share, 1) + " %", "by the median rank, at the barrier"),
        card("extrapolated wait at " + p.ranks + " ranks", fixed(scaled(p.predicted_wait_seconds, 1e3), 2) + " ms",
          "E[max of N] " + fixed(p.expected_max_slowdown, 3) + " (quantile estimate " + fixed(p.quantile_max_slowdown, 3) + ")"),
        card("cores in the distribution", String(p.cores), "measured (core, mode) figures"),
      ),
    );
  }

  function sweepLegend(againstCluster, lettered) {
    const ramps = [0.8, 0.9, 1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5].map((v) =>
      el("span", { dataset: { slowdown: v.toFixed(2) } }, el("i", { style: { background: cssRgb(slowdownRgb(v)) } }),
        v >= 1.5 ? "≥1.50" : v <= 0.8 ? "≤0.80" : v.toFixed(2)));
    const swatch = (rgb, text, className) =>
      el("span", null, el("i", { className: "swatch" + (className ? " " + className : ""), style: rgb ? { background: cssRgb(rgb) } : null }), text);
    return el(
      "div",
      { className: "legend" },
      el("span", null, "Colour: expected slowdown against ", el("b", null, againstCluster ? "the cluster's" : "each node's"), " reference core"),
      el("span", { className: "ramp" }, ramps),
      swatch(GREY_SKIPPED, "skipped"),
      swatch(GREY_NO_FIGURE, "no figure"),
      swatch(null, "no such CPU", "hatched"),
      lettered
        ? el("span", null, "Letters: ", el("b", null, "N"), " noisy, ", el("b", null, "T"), " throttled, ", el("b", null, "C"),
            " contended, ", el("b", null, "S"), " slow (hover a cell for its cause)")
        : el("span", null, "Hover a cell for its state and cause"),
    );
  }

  function sweepHeatmap(report, nodeName) {
    const title = "Heatmap: nodes × cores";
    const cells = report.cells || [];
    if (cells.length === 0)
      return {
        section: section("heatmap", title, note("No heatmap: this report holds no per-core cells. Run the sweep with --full to draw every core; the worst cores and nodes below are complete without it.", "no-heatmap")),
        probe: null,
      };
    // Columns: every CPU OS index any node has, so a CPU lines up across rows.
    const cpus = new Set();
    let againstCluster = false;
    for (const node of cells)
      for (const core of node.cores) {
        cpus.add(core.cpu);
        if (isNum(core.cluster_slowdown)) againstCluster = true;
      }
    const columns = [...cpus].sort((a, b) => a - b);
    const columnOf = new Map(columns.map((cpu, i) => [cpu, i]));
    const rows = [...cells].sort((a, b) => a.node - b.node);
    const rowOf = new Map(rows.map((node, i) => [node.node, i]));
    const grid = rows.map((node) => {
      const line = new Array(columns.length).fill(null);
      for (const core of node.cores) line[columnOf.get(core.cpu)] = core;
      return line;
    });
    const shown = (core) => (isNum(core.cluster_slowdown) ? core.cluster_slowdown : core.expected_slowdown);
    const rgbOf = (core) => (core.state === "skipped" ? GREY_SKIPPED : isNum(shown(core)) ? slowdownRgb(shown(core)) : GREY_NO_FIGURE);
    let count = 0;
    for (const line of grid) for (const core of line) if (core) ++count;
    const compact = columns.length > COMPACT_COLUMNS;
    // Cells 7 px (20 px with a letter) with 1 px between them, smaller on
    // allocations so tall that the map would outgrow a canvas.
    const fit = Math.floor(MAX_CANVAS_SIDE / rows.length);
    const pitchY = Math.min(compact ? 8 : 21, fit);
    const gap = pitchY >= 3 ? 1 : 0;
    const lettered = !compact && pitchY === 21;
    const map = heatmap({
      rows: rows.length,
      cols: columns.length,
      cellW: compact ? 7 : 22,
      cellH: Math.max(1, pitchY - gap),
      gap,
      colour: (r, c) => (grid[r][c] ? packed(rgbOf(grid[r][c])) : HATCH),
      letter: !lettered
        ? null
        : (r, c) => {
            const core = grid[r][c];
            return core && STATE_LETTER[core.state] ? [STATE_LETTER[core.state], inkOn(rgbOf(core))] : null;
          },
      hover: (r, c) => {
        const node = rows[r].node;
        const core = grid[r][c];
        if (!core) return "node " + node + " (" + nodeName(node) + ") has no cpu " + columns[c];
        let text = "node " + node + " cpu " + core.cpu + ": " + core.state;
        if (core.state !== "skipped") {
          text += ", expected slowdown " + fixed(core.expected_slowdown, 3);
          if (isNum(core.cluster_slowdown)) text += ", cluster " + fixed(core.cluster_slowdown, 3);
        }
        if (core.cause) text += ": " + core.cause;
        return text;
      },
      rowLabel: (r) => nodeName(rows[r].node),
      // Compact columns are 8 px wide: one label per group of eight.
      colLabel: (c) => (compact && c % 8 !== 0 ? null : String(columns[c])),
      corner: "node \\ cpu",
      label: "nodes × cores heatmap of expected slowdowns",
    });
    map.map.dataset.cells = String(count);
    return {
      section: section("heatmap", title, sweepLegend(againstCluster, lettered), map.element),
      probe: (node, cpu) => {
        const r = rowOf.get(node);
        const c = columnOf.get(cpu);
        if (r === undefined || c === undefined) return { text: "no such cell", colour: "" };
        return { text: map.hoverAt(r, c), colour: map.colourAt(r, c) };
      },
    };
  }

  function nodeCell(name, index) {
    return el("td", null, name + " ", el("small", null, "(" + index + ")"));
  }

  function worstCores(worst, nodeName) {
    const title = "Worst cores";
    if (worst.length === 0) return section("worst-cores", title, note("No core was measured."));
    return section(
      "worst-cores",
      title,
      table(
        ["#", "node", "cpu", "state", "mode", "expected slowdown", "cluster slowdown", "cause"],
        worst.map((core, i) =>
          el("tr", null, num(String(i + 1)), nodeCell(core.node_name || nodeName(core.node), core.node), num(String(core.cpu)),
            el("td", null, stateBadge(core.state)), el("td", null, String(core.mode)), slowdownCell(core.expected_slowdown),
            slowdownCell(core.cluster_slowdown), el("td", null, core.cause || ""))),
      ),
    );
  }

  function worstNodes(nodes) {
    const title = "Worst nodes";
    if (nodes.length === 0) return section("worst-nodes", title, note("No node summaries."));
    // Worst median first; nothing measured (null) last; ties by index.
    const sorted = [...nodes].sort((a, b) => {
      const x = a.median_expected_slowdown;
      const y = b.median_expected_slowdown;
      if (isNum(x) !== isNum(y)) return isNum(x) ? -1 : 1;
      if (isNum(x) && x !== y) return y - x;
      return a.index - b.index;
    });
    const rows = [];
    sorted.forEach((node, i) => {
      if (rows.length >= WORST_NODES && !node.outlier) return;
      let notOk = 0;
      for (const [state, n] of Object.entries(node.states || {})) if (UNHEALTHY.has(state)) notOk += n;
      rows.push(
        el("tr", null, num(String(i + 1)), nodeCell(node.name || "node " + node.index, node.index),
          slowdownCell(node.median_expected_slowdown), slowdownCell(node.max_expected_slowdown), num(fixed(node.robust_z, 2)),
          el("td", null, node.outlier ? el("span", { className: "flag" }, "outlier") : null), num(String(node.probed_cores)),
          num(String(notOk)), num(fixed(scaled(node.median_clock_hertz, 1e-9), 2) + " GHz"),
          num(fixed(scaled(node.median_noise_ratio, 100), 2) + " %")));
    });
    return section(
      "worst-nodes",
      title,
      el("p", { className: "meta" }, "By median expected slowdown over the node's cores; a node is an outlier when its robust z (against the median and MAD over nodes) is high and it is measurably slower."),
      table(["#", "node", "median slowdown", "max slowdown", "robust z", "outlier", "probed", "not ok", "median clock", "median noise"], rows),
      rows.length < nodes.length ? el("p", { className: "meta" }, nodes.length - rows.length + " more nodes not listed.") : null,
    );
  }

  function quantiles(list) {
    const title = "Cluster quantiles";
    if (list.length === 0) return section("quantiles", title, note("No quantiles."));
    return section(
      "quantiles",
      title,
      table(
        ["metric", "mode", "kind", "cores", "unit", "min", "p50", "p90", "p99", "max"],
        list.map((q) => {
          const [factor, unit] = METRIC_SCALE[q.metric] || [1, "×"];
          return el("tr", null, el("td", null, String(q.metric)), el("td", null, String(q.mode)),
            el("td", null, q.kind ? String(q.kind) : "all"), num(String(q.count)), el("td", null, unit),
            [q.min, q.p50, q.p90, q.p99, q.max].map((v) => num(general(scaled(v, factor)))));
        }),
      ),
    );
  }

  function drain(commands) {
    const title = "Drain commands";
    if (commands.length === 0) return section("drain", title, el("p", { className: "meta" }, "Nothing to drain."));
    return section(
      "drain",
      title,
      el("p", { className: "meta" }, "What a Slurm site would run to take these out of service. corenoise printed them and ran none: review before you paste."),
      el("pre", null, commands.map((command) => command + "\n").join("")),
    );
  }

  // --------------------------------------------------------- job report

  function renderJob(report, root) {
    document.title = "corenoise job — " + report.program + ", " + report.ranks_total + " ranks";
    const ranks = report.ranks || [];
    const indexOf = new Map(ranks.map((rank, i) => [rank.rank, i]));
    const map = guarded("lateness", "Lateness: ranks × steps", () => jobLateness(report, ranks, indexOf));
    // Every node's row where the ranks are not all shown, or on several nodes.
    const nodes = report.by_node || [];
    const byNode = nodes.length > 1 || ranks.length < (report.ranks_reported || 0);
    const nodeMap = byNode ? guarded("node-lateness", "Lateness: nodes × steps", () => jobNodeLateness(report)) : null;
    append(root, [
      jobHeader(report),
      jobWaiting(report),
      jobWorstRanks(report, ranks, indexOf),
      jobPhases(report.phases || [], report.worst_steps || []),
      jobFindings(report.findings || []),
      jobCallSites(report.call_sites || []),
      nodeMap ? nodeMap.section : null,
      map.section,
    ]);
    if (map.attached) map.attached();
    if (nodeMap && nodeMap.attached) nodeMap.attached();
    return map.probe;
  }

  function cpuText(cpus) {
    return (/^\d+$/.test(String(cpus)) ? "cpu " : "cpus ") + cpus;
  }

  function seconds(x) {
    return fixed(x, 3) + " s";
  }

  function jobHeader(report) {
    return el(
      "header",
      { id: "summary" },
      el(
        "h1",
        null,
        "corenoise job report",
        el("span", { className: "status " + (report.complete ? "healthy" : "unhealthy") }, report.complete ? "complete" : "incomplete"),
      ),
      el("p", { className: "meta" }, "Program ", el("code", { id: "program" }, String(report.program))),
      report.mpi_library
        ? el("p", { className: "meta" }, "MPI library ", el("code", { id: "mpi-library" }, String(report.mpi_library)),
            report.mpi_library_version ? " (" + report.mpi_library_version + ")" : "")
        : null,
      el(
        "p",
        { className: "meta" },
        "MPI family ", el("b", null, String(report.mpi_family)), "; ",
        el("b", null, String(report.ranks_reported)), " of ", el("b", null, String(report.ranks_total)), " ranks reported, on ",
        el("b", null, String(report.nodes)), " nodes; ", el("b", null, String(report.steps)), " steps; elapsed ",
        fixed(report.elapsed_seconds, 1), " s; started ", utcTime(report.started_unix_seconds), "; corenoise ", String(report.version),
      ),
      typeof report.ranks_in_full === "number" && report.ranks_in_full < report.ranks_reported
        ? el("p", { className: "meta", id: "in-full" },
            "Every rank is judged and counted in the figures, the findings and the nodes' heatmap; the rank tables and the ranks' heatmap show the ",
            el("b", null, String(report.ranks_in_full)), " ranks named (the worst, and each node's worst; corenoise job --full N shows every rank of a job of up to N).")
        : null,
      report.complete
        ? null
        : el("p", { className: "warning", id: "incomplete" },
            "Incomplete: " + (report.incomplete_reason || "not every rank reported") + " (" + report.ranks_reported + " of " + report.ranks_total + " ranks reported). The figures below cover the ranks that did."),
      jobLive(report.live),
    );
  }

  // A live epoch's report (docs/job.md, "Live"): the job so far, and
  // whether it is still running.
  function jobLive(live) {
    if (!live) return null;
    const when = "live epoch " + live.epoch + ", reduced " + utcTime(live.reduced_unix_seconds);
    return el("div", null, el("p", { className: "warning", id: "live" },
      live.ended_without_finalize
        ? "The job so far, at its last " + when + ": the job ended after it without MPI_Finalize (killed, or a time limit; " + live.ranks_finalized + " ranks reached it); the figures cover its steps up to that epoch."
        : live.rebuilt_from_spill
          ? "The job so far, at its last " + when + ": every rank reached MPI_Finalize after it, but the final reduction did not complete; the figures cover its steps up to that epoch."
          : "Live: the job so far, at " + when + "; the job is running, and this page reloads every " + live.interval_seconds + " s."),
      liveWindow(live.window));
  }

  // A window rank's pattern over the job, in a few words.
  function windowPattern(p) {
    if (!p || typeof p !== "object") return "";
    if (p.kind === "chronic") return p.onset_step > 1 ? ", chronic since " + seconds(p.onset_seconds) : ", chronic from the start";
    return ", in bursts";
  }

  // Who was late in the epoch's own window (since the epoch before): named
  // there however long the job ran before (docs/job.md, "Live").
  function liveWindow(window) {
    if (!window) return null;
    const late = window.late_ranks || [];
    const span = "In its window, " + seconds(window.start_seconds) + " to " + seconds(window.end_seconds) + " into the job: ";
    return el("p", { className: "meta", id: "live-window" }, span,
      late.length
        ? late.slice(0, 5).map((r) => "rank " + r.rank + " made the others wait " + seconds(r.wait_caused_seconds) + " (" + r.cause + windowPattern(r.lateness_pattern) + ")").join("; ") +
          (late.length > 5 ? "; " + (late.length - 5) + " more" : "") + "."
        : "no rank was late.");
  }

  // A running job's page reloads at its cadence, to show the next epoch
  // (#noreload keeps it still, for tests and reading).
  function reloadWhileLive(report) {
    const live = report.live;
    if (!live || live.rebuilt_from_spill || location.hash.includes("noreload")) return;
    const seconds = Math.max(1, Number(live.interval_seconds) || 30);
    document.body.dataset.reloadSeconds = String(seconds);
    setTimeout(() => location.reload(), seconds * 1000);
  }

  function jobWaiting(report) {
    const card = (label, value, sub) =>
      el("div", { className: "card" }, el("div", { className: "label" }, label), el("div", { className: "big" }, value), el("div", { className: "label" }, sub));
    const busy = report.wait_seconds + report.compute_seconds;
    // Most first; ties by name, whatever order the producer wrote.
    const causes = Object.entries(report.causes || {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const total = causes.reduce((sum, [, s]) => sum + (isNum(s) ? s : 0), 0);
    const most = causes.length && isNum(causes[0][1]) ? causes[0][1] : 0;
    return section(
      "waiting",
      "Time waiting, and why",
      el(
        "div",
        { className: "cards" },
        card("waiting in MPI, summed over ranks", seconds(report.wait_seconds), fixed(busy > 0 ? (100 * report.wait_seconds) / busy : NaN, 1) + " % of the ranks' time"),
        card("computing, summed over ranks", seconds(report.compute_seconds), "between the blocking MPI calls"),
        card("wait caused by late ranks", seconds(report.wait_caused_seconds),
          fixed(report.wait_seconds > 0 ? (100 * report.wait_caused_seconds) / report.wait_seconds : NaN, 1) + " % of the waiting"),
        // Older reports (before exchanges were charged) have no split.
        isNum(report.exchange_wait_seconds)
          ? card("at collectives / in exchanges", seconds(report.collective_wait_seconds) + " / " + seconds(report.exchange_wait_seconds),
              "waiting; caused by late ranks: " + seconds(report.collective_wait_caused_seconds) + " / " + seconds(report.exchange_wait_caused_seconds))
          : null,
      ),
      el("p", { className: "meta" }, "What the waiting was for: the waiting the late ranks caused, by cause of their lateness:"),
      el(
        "div",
        { className: "bars", id: "causes" },
        causes.map(([cause, s]) =>
          el("div", { dataset: { cause }, style: { display: "contents" }, className: isNum(s) && s > 0 ? "" : "zero" },
            el("span", null, cause),
            el("div", { className: "bar" }, el("i", { style: { width: (most > 0 && isNum(s) ? (100 * s) / most : 0) + "%" } })),
            el("span", null, seconds(s) + (total > 0 && isNum(s) ? " (" + fixed((100 * s) / total, 1) + " %)" : "")))),
      ),
    );
  }

  function jobWorstRanks(report, ranks, indexOf) {
    const title = "Worst ranks";
    let order = Array.isArray(report.worst_ranks) ? report.worst_ranks : null;
    if (!order)
      order = [...ranks].sort((a, b) => b.wait_caused_seconds - a.wait_caused_seconds).slice(0, 20).map((r) => r.rank);
    const rows = order.filter((rank) => indexOf.has(rank)).map((rank) => ranks[indexOf.get(rank)]);
    if (rows.length === 0) return section("worst-ranks", title, note("No rank reported."));
    return section(
      "worst-ranks",
      title,
      el("p", { className: "meta" }, "By the wait each rank caused the others (worst first): the job's time fixing it would save (its steps replayed at the others' pace), its cause, the figures behind it, what ran on its CPU instead, and the fix that fits."),
      table(
        ["#", "rank", "host", "cpus", "wait caused", "saving", "excess", "cause", "when", "causes", "culprits", "advice", "daemon"],
        rows.map((rank, i) => {
          const causes = Object.entries(rank.causes || {}).filter(([, s]) => isNum(s) && s > 0).sort((a, b) => b[1] - a[1]);
          // Excess that no counter explains, after the causes.
          if (isNum(rank.unexplained_seconds) && rank.unexplained_seconds > 0) causes.push(["unexplained", rank.unexplained_seconds]);
          return el("tr", { dataset: { rank: String(rank.rank) } }, num(String(i + 1)), num(String(rank.rank)), el("td", null, String(rank.host)),
            el("td", null, String(rank.cpus)), num(seconds(rank.wait_caused_seconds)),
            num(isNum(rank.saving_seconds) ? seconds(rank.saving_seconds) : DASH), num(seconds(rank.excess_seconds)),
            el("td", null, el("b", null, String(rank.cause))),
            el("td", { className: "list" }, patternText(rank.lateness_pattern)),
            el("td", { className: "list" }, causes.length ? causes.map(([cause, s]) => el("div", null, cause + " " + seconds(s))) : DASH),
            el("td", { className: "list" }, (rank.culprits || []).length ? rank.culprits.map((c) => el("div", null, culpritText(c))) : DASH),
            el("td", { className: "advice" }, rank.advice || DASH),
            el("td", { className: "list" }, daemonVerdicts(rank.daemon)));
        }),
      ),
    );
  }

  // The warm-up apart from the steady state, each with its own late ranks,
  // and the steps that kept the others waiting longest.
  function jobPhases(phases, steps) {
    const title = "Warm-up and steady state";
    const stepsText = (first, last) => (first === last ? "step " + first : "steps " + first + "–" + last);
    const lateText = (phase) =>
      (phase.late_ranks || []).length
        ? phase.late_ranks.map((r) => el("div", null, "rank " + r.rank + ": " + r.cause + " " + seconds(r.cause_seconds) + ", caused " + seconds(r.wait_caused_seconds)))
        : "none late beyond the ranks' own spread";
    return section(
      "phases",
      title,
      phases.length
        ? table(
            ["phase", "steps", "waiting", "caused by late ranks", "late ranks"],
            phases.map((p) => el("tr", { dataset: { phase: String(p.name) } }, el("td", null, el("b", null, String(p.name))),
              el("td", null, stepsText(p.first_step, p.last_step)), num(seconds(p.wait_seconds)), num(seconds(p.wait_caused_seconds)),
              el("td", { className: "list" }, lateText(p)))),
          )
        : note("Not split: a job of fewer than 4 steps, one whose ranks' steps could not be compared, or a report from spill files."),
      steps.length
        ? table(
            ["worst step", "waiting caused", "last to arrive", "cause", "call site"],
            steps.map((s) => el("tr", { dataset: { step: String(s.first_step) } }, el("td", null, stepsText(s.first_step, s.first_step + s.steps - 1)),
              num(seconds(s.wait_caused_seconds)), el("td", null, "rank " + s.last_rank),
              el("td", null, String(s.cause) + (s.phase ? " (" + s.phase + ")" : "")),
              s.call ? siteCell(s.call + " from " + s.site) : el("td", null, DASH))),
          )
        : note("No step kept the others waiting 1 ms or more."),
    );
  }

  // What the ranks' configuration showed, whatever the timing said.
  function jobFindings(findings) {
    const title = "Configuration findings";
    if (findings.length === 0) return section("findings", title, note("None: no rank ran more busy threads than CPUs, shared CPUs or went unbound, left a thread pool's size unset, or had XLA_FLAGS words XLA drops."));
    return section(
      "findings",
      title,
      table(
        ["kind", "ranks", "nodes", "evidence", "fix"],
        findings.map((f) => el("tr", { dataset: { kind: String(f.kind) } }, el("td", null, el("b", null, String(f.kind))),
          el("td", null, String((f.ranks || []).length)), el("td", null, (f.nodes || []).join(", ") || DASH),
          el("td", { className: "advice" }, String(f.evidence)), el("td", { className: "advice" }, String(f.fix)))),
      ),
    );
  }

  // When a late rank was late (lateness_pattern): chronic since a step, or
  // in bursts, each with its steps and its seconds into the job.
  function patternText(p) {
    if (!p || typeof p !== "object") return DASH;
    const share = isNum(p.late_share) ? ", late in " + fixed(100 * p.late_share, 0) + " % of the steps" : "";
    const stretch = (s) => "steps " + s.first_step + "-" + s.last_step + " (" + seconds(s.start_seconds) + "-" + seconds(s.end_seconds) + ")";
    const stretches = Array.isArray(p.stretches) ? p.stretches.filter((s) => s && typeof s === "object") : [];
    if (p.kind === "chronic")
      return (p.onset_step > 1 ? "chronic since step " + p.onset_step + " (" + seconds(p.onset_seconds) + ")" : "chronic from the start") + share;
    return [el("div", null, "bursts" + share)].concat(stretches.map((s) => el("div", null, stretch(s))),
      isNum(p.stretches_unlisted) && p.stretches_unlisted > 0 ? [el("div", null, "and " + p.stretches_unlisted + " earlier")] : []);
  }

  function culpritText(c) {
    if (c.kind === "traced")
      return c.name + " on cpu " + c.cpu + " (traced): " + seconds(c.seconds) + ", " + fixed(100 * c.share_of_cpu, 1) + " % of the CPU";
    if (c.kind === "irq" || c.kind === "softirq")
      return (c.kind === "irq" ? "IRQ " : "softirq ") + c.line + (c.name ? " (" + c.name + ")" : "") + " on cpu " + c.cpu + ": " + fixed(c.count, 0) + " times, " + fixed(c.more_than_other_cpus, 0) + " more than the node's other CPUs";
    const where = [isNum(c.pid) ? "pid " + c.pid : null, isNum(c.cpu) ? "cpu " + c.cpu : null].filter(Boolean);
    return c.kind + " " + c.name + (where.length ? " (" + where.join(", ") + ")" : "") + " " + seconds(c.seconds);
  }

  // The node daemon's verdict on the rank's CPUs: one verdict, or one per
  // CPU keyed by its number; null where no daemon answered.
  function daemonVerdicts(daemon) {
    if (!daemon || typeof daemon !== "object") return DASH;
    const verdict = (v) => v.state + (v.cause ? ": " + v.cause : "") + (isNum(v.age_seconds) ? " (" + fixed(v.age_seconds, 0) + " s old)" : "");
    if (typeof daemon.state === "string") return verdict(daemon);
    const cpus = Object.keys(daemon).sort((a, b) => Number(a) - Number(b));
    return cpus.length ? cpus.map((cpu) => el("div", null, "cpu " + cpu + " " + verdict(daemon[cpu] || {}))) : DASH;
  }

  // A call site's cell: a demangled C++ signature runs to hundreds of
  // characters, so the cell wraps it within its width, at most three lines,
  // and its title holds the whole name (report.css, td.site).
  function siteCell(text) {
    return el("td", { className: "site" }, el("code", { title: text }, text));
  }

  function jobCallSites(sites) {
    const title = "Call sites";
    if (sites.length === 0) return section("call-sites", title, note("No MPI call waited."));
    const sorted = [...sites].sort((a, b) => b.wait_seconds - a.wait_seconds);
    return section(
      "call-sites",
      title,
      table(
        ["call", "site", "calls", "wait, all ranks", "longest wait"],
        sorted.map((s) => el("tr", null, el("td", null, String(s.call)), siteCell(String(s.site)), num(String(s.calls)),
          num(seconds(s.wait_seconds)), num(seconds(s.wait_max_seconds)))),
      ),
    );
  }

  // The q-quantile of finite values (nearest rank) by selection: O(n), where
  // sorting 3.84 M values would take a noticeable part of a second. Reorders
  // `values`.
  function quantile(values, q) {
    const n = values.length;
    if (n === 0) return NaN;
    const k = Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
    let lo = 0;
    let hi = n - 1;
    while (hi > lo) {
      const a = values[lo], b = values[(lo + hi) >> 1], c = values[hi];
      const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
      let i = lo;
      let j = hi;
      while (i <= j) {
        while (values[i] < pivot) ++i;
        while (values[j] > pivot) --j;
        if (i <= j) {
          const t = values[i];
          values[i++] = values[j];
          values[j--] = t;
        }
      }
      if (k <= j) hi = j;
      else if (k >= i) lo = i;
      else break;
    }
    return values[k];
  }

  // The ranks' lateness (report.lateness, a row per rank in full) or the
  // nodes' (report.by_node, a row per node: its latest rank per column).
  function jobLateness(report, ranks, indexOf) {
    const rankOf = (r) => (ranks[r] ? ranks[r] : { rank: r, host: "?", cpus: "?" });
    return latenessMap(report.lateness, {
      id: "lateness",
      title: "Lateness: ranks × steps",
      what: "rank",
      rowLabel: (r) => String(rankOf(r).rank),
      where: (r) => "rank " + rankOf(r).rank + " (" + rankOf(r).host + ", " + cpuText(rankOf(r).cpus) + ")",
      rowOf: (rank) => indexOf.get(rank),
    });
  }

  function jobNodeLateness(report) {
    const nodes = report.by_node || [];
    const name = (n) => (n.host ? n.host : "node of rank " + n.first_rank);
    const lateness = {
      unit: report.lateness && report.lateness.unit ? report.lateness.unit : "seconds",
      steps_per_column: report.lateness ? report.lateness.steps_per_column : 1,
      rows: nodes.map((n) => (Array.isArray(n.lateness) ? n.lateness : [])),
    };
    return latenessMap(lateness, {
      id: "node-lateness",
      title: "Lateness: nodes × steps",
      what: "node",
      rowLabel: (r) => name(nodes[r]),
      where: (r) =>
        "node " + name(nodes[r]) + " (" + plural(nodes[r].ranks, "rank") +
        (nodes[r].worst_rank === null || nodes[r].worst_rank === undefined ? "" : ", worst rank " + nodes[r].worst_rank) + ")",
      rowOf: (r) => (r >= 0 && r < nodes.length ? r : undefined),
    });
  }

  function latenessMap(lateness, view) {
    const title = view.title;
    if (!lateness || !Array.isArray(lateness.rows) || lateness.rows.length === 0 || lateness.rows.every((row) => row.length === 0))
      return { section: section(view.id, title, note("No lateness figures in this report.")), probe: null };
    const toMs = { seconds: 1e3, milliseconds: 1, ms: 1 }[lateness.unit];
    if (toMs === undefined) throw new Error("lateness.unit " + JSON.stringify(lateness.unit) + " is not seconds or milliseconds");
    const rows = lateness.rows.length;
    let cols = lateness.columns || 0;
    for (const row of lateness.rows) cols = Math.max(cols, row.length);
    // Flat, in ms: one typed array for the colours, the scale and the hover.
    const values = new Float32Array(rows * cols).fill(NaN);
    let finite = 0;
    for (let r = 0; r < rows; ++r) {
      const row = lateness.rows[r];
      for (let c = 0, at = r * cols; c < row.length; ++c, ++at) {
        const v = row[c];
        if (typeof v === "number") {
          values[at] = v * toMs;
          ++finite;
        }
      }
    }
    const known = new Float32Array(finite);
    let max = 0;
    for (let i = 0, j = 0; i < values.length; ++i)
      if (values[i] === values[i]) {
        known[j++] = values[i];
        if (values[i] > max) max = values[i];
      }
    // Dark red at the 99th percentile by default, not the maximum: one
    // stalled step would otherwise wash every other cell out to white. But
    // where fewer than 1 % of the cells are late (one bad rank among
    // thousands) the 99th percentile is the on-time ranks' jitter, which it
    // then paints red; the legend offers the maximum for that case.
    const p99 = quantile(known, 0.99);
    const scales = {
      p99: { top: p99 > 0 ? p99 : max > 0 ? max : 1, name: p99 > 0 ? "the 99th percentile" : "the maximum" },
      max: { top: max > 0 ? max : 1, name: "the maximum" },
    };
    let scale = scales.p99;
    const lut = new Uint32Array(256);
    for (let i = 0; i < 256; ++i) lut[i] = packed(ramp(REDS, i / 255));
    const noFigure = packed(GREY_NO_FIGURE);
    let step = 255 / scale.top;
    const perColumn = lateness.steps_per_column || 1;
    // At least one CSS pixel per cell (a pixel smaller would hide a rank);
    // small jobs drawn larger.
    const scaleX = Math.max(1, Math.min(16, Math.floor(960 / cols)));
    const scaleY = Math.max(1, Math.min(16, Math.floor(600 / rows)));
    const columnStep = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000].find((s) => s * scaleX >= 40) || 10000;
    const map = heatmap({
      rows,
      cols,
      cellW: 1,
      cellH: 1,
      gap: 0,
      scaleX,
      scaleY,
      colour: (r, c) => {
        const v = values[r * cols + c];
        return v === v ? lut[Math.min(255, Math.max(0, Math.round(v * step)))] : noFigure;
      },
      hover: (r, c) => {
        const v = values[r * cols + c];
        return view.where(r) + " column " + c + ": " + (v === v ? fixed(v, 3) + " ms late" : "no figure");
      },
      rowLabel: view.rowLabel,
      colLabel: (c) => (c % columnStep === 0 ? String(c) : null),
      corner: view.what + " \\ column",
      label: view.what + "s × steps heatmap of lateness at the collectives",
    });
    map.map.dataset.cells = String(finite);
    const topName = el("span");
    const topValue = el("span");
    function showScale() {
      map.map.dataset.scaleMs = scale.top.toFixed(3);
      topName.textContent = scale.name;
      topValue.textContent = " ≥" + fixed(scale.top, 3) + " ms";
    }
    showScale();
    const choice = (key, text) => {
      const input = el("input", { type: "radio", name: view.id + "-scale", value: key, defaultChecked: scales[key] === scale });
      input.addEventListener("change", () => {
        scale = scales[key];
        step = 255 / scale.top;
        showScale();
        map.repaint();
      });
      return [el("label", null, input, text), input];
    };
    const [p99Choice] = choice("p99", "99th percentile (" + fixed(scales.p99.top, 3) + " ms)");
    const [maxChoice, maxInput] = choice("max", "maximum (" + fixed(max, 3) + " ms)");
    const legend = el(
      "div",
      { className: "legend" },
      el("span", null, "Colour: how much later than the first rank each " + view.what +
        (view.what === "node" ? "'s latest rank" : "") + " reached the collectives of a column (" +
        plural(perColumn, "step") + " per column), from white (on time) to dark red (", topName, ")"),
      el("span", null, "0 ms ", el("i", { className: "gradient", style: { background: cssGradient(REDS) } }), topValue),
      el("span", null, "dark red at: ", p99Choice, " ", maxChoice),
      el("span", null, el("i", { className: "swatch", style: { background: cssRgb(GREY_NO_FIGURE) } }), "no figure"),
    );
    return {
      section: section(view.id, title, legend, map.element),
      // #scale=max in the URL picks the maximum, as a click would (a link to
      // the page that shows what its sender saw). Once in the document: a
      // detached radio button fires no change.
      attached() {
        if (/(?:^#|&)scale=max(?:&|$)/.test(location.hash)) maxInput.click();
      },
      probe: (row, column) => {
        const r = view.rowOf(row);
        if (r === undefined || column < 0 || column >= cols) return { text: "no such cell", colour: "" };
        return { text: map.hoverAt(r, column), colour: map.colourAt(r, column) };
      },
    };
  }

  // ---------------------------------------------------------------- main

  // Errors in drawing a heatmap, kept to its section: the tables still show.
  const sectionErrors = [];
  function guarded(id, title, build) {
    try {
      return build();
    } catch (error) {
      const message = error && error.message ? error.message : String(error);
      sectionErrors.push(message);
      const box = el("div", { className: "error-box", role: "alert" }, "This section could not be drawn: " + message);
      return { section: section(id, title, box), probe: null };
    }
  }

  // #cell=A,B;C,D: hover each cell and list what the hover said, with the
  // colour drawn there (the headless-browser tests read this).
  function probeCells(probe) {
    const match = /(?:^#|&)cell=([^&]*)/.exec(location.hash);
    if (!match) return;
    const list = el("ul", { id: "cell-probe", hidden: true });
    for (const pair of decodeURIComponent(match[1]).split(";")) {
      const [a, b] = pair.split(",").map(Number);
      const seen = probe ? probe(a, b) : { text: "no heatmap", colour: "" };
      list.appendChild(el("li", { dataset: { cell: a + "," + b, colour: seen.colour } }, seen.text));
    }
    document.body.appendChild(list);
  }

  function main() {
    const root = document.getElementById("report");
    const report = JSON.parse(document.getElementById("corenoise-report").textContent);
    document.body.dataset.parseMs = (performance.now() - scriptStarted).toFixed(0);
    let probe;
    if (report.schema === "corenoise-job/1") {
      probe = renderJob(report, root);
      reloadWhileLive(report);
    }
    // Sweep reports written before the schema field have none.
    else if (report.schema === "corenoise-sweep/1" || (report.schema === undefined && "node_count" in report)) probe = renderSweep(report, root);
    else throw new Error("this page cannot read a report of schema " + JSON.stringify(report.schema));
    root.appendChild(el("footer", null, "Generated by corenoise " + report.version + ". Self-contained: this page loads nothing from anywhere."));
    probeCells(probe);
  }

  try {
    main();
    document.body.dataset.rendered = sectionErrors.length ? "error: " + sectionErrors.join("; ") : "ok";
  } catch (error) {
    const message = error && error.message ? error.message : String(error);
    document.body.insertBefore(el("div", { className: "error-box", role: "alert" }, "This report could not be drawn: " + message), document.body.firstChild);
    document.body.dataset.rendered = "error: " + message;
  }
  document.body.dataset.scriptMs = (performance.now() - scriptStarted).toFixed(0);
  document.body.dataset.renderMs = performance.now().toFixed(0);
})();
