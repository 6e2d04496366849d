// zcprof HTML report: draws every chart from the embedded JSON with
// Chart.js, then records in #zc-status which charts drew something (the
// rendering test reads it with chromium --dump-dom).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("zc-data").textContent);
  var charts = [];
  var palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f"];
  var root = document.getElementById("charts");

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function section(title, note) {
    root.appendChild(el("h2", title));
    if (note) root.appendChild(el("p", note, "note"));
  }
  // chart adds one Chart.js chart; animation off so it is drawn at once.
  function chart(id, type, labels, datasets, opts) {
    var box = el("div", undefined, "chart");
    var canvas = document.createElement("canvas");
    canvas.id = id;
    box.appendChild(canvas);
    root.appendChild(box);
    datasets.forEach(function (d, i) {
      if (!d.backgroundColor) d.backgroundColor = palette[i % palette.length];
    });
    var options = {
      animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { legend: { position: "right" }, title: { display: !!opts.title, text: opts.title } },
      scales: {
        x: { stacked: !!opts.stacked },
        y: { stacked: !!opts.stacked, beginAtZero: true, title: { display: !!opts.unit, text: opts.unit } }
      }
    };
    if (opts.horizontal) options.indexAxis = "y";
    var c = new Chart(canvas, { type: type, data: { labels: labels, datasets: datasets }, options: options });
    charts.push({ id: id, chart: c });
    return c;
  }

  var ms = function (ns) { return ns / 1e6; };
  function cellName(c) { return c.method + "→" + c.rx_method + " " + size(c.size) + " ×" + c.streams; }
  function size(n) {
    if (n >= 1 << 20 && n % (1 << 20) === 0) return (n >> 20) + "M";
    if (n >= 1024 && n % 1024 === 0) return (n >> 10) + "K";
    return String(n);
  }

  // entries: [{label, p (a Process)}]
  function byPath(entries, id, title) {
    var paths = [];
    entries.forEach(function (e) { (e.p.paths || []).forEach(function (p) { if (paths.indexOf(p.path) < 0) paths.push(p.path); }); });
    var ds = paths.map(function (name) {
      return { label: name, data: entries.map(function (e) {
        var p = (e.p.paths || []).find(function (q) { return q.path === name; });
        return p ? ms(p.cpu_ns) : 0;
      }) };
    });
    chart(id, "bar", entries.map(function (e) { return e.label; }), ds, { stacked: true, unit: "CPU ms (exact)", title: title });
  }
  function byCategory(entries, id, title) {
    var cats = [], any = false;
    entries.forEach(function (e) { (e.p.paths || []).forEach(function (p) { (p.categories || []).forEach(function (c) {
      any = true; if (cats.indexOf(c.category) < 0) cats.push(c.category); }); }); });
    if (!any) return false;
    var ds = cats.map(function (name) {
      return { label: name, data: entries.map(function (e) {
        var s = 0;
        (e.p.paths || []).forEach(function (p) { (p.categories || []).forEach(function (c) { if (c.category === name) s += c.cpu_ns; }); });
        return ms(s);
      }) };
    });
    chart(id, "bar", entries.map(function (e) { return e.label; }), ds, { stacked: true, unit: "CPU ms", title: title });
    return true;
  }
  function exactVsTimes(entries, id) {
    var labels = entries.map(function (e) { return e.label; });
    var c = function (f) { return entries.map(function (e) { return ms(f(e.p.cpu)); }); };
    chart(id, "bar", labels, [
      { label: "exact user", data: c(function (x) { return x.user_ns; }) },
      { label: "times() user", data: c(function (x) { return x.times_user_ns; }) },
      { label: "exact kernel (syscall + softirq + irq)", data: c(function (x) { return x.kernel_ns + x.softirq_ns + x.hardirq_ns; }) },
      { label: "times() system", data: c(function (x) { return x.times_system_ns; }) },
      { label: "schedstat (sum_exec_runtime)", data: c(function (x) { return x.schedstat_ns; }) }
    ], { unit: "ms" });
  }
  function verdicts(list) {
    if (!list.length) return;
    section("Verdicts");
    var ul = el("ul", undefined, "verdicts");
    list.forEach(function (v) { ul.appendChild(el("li", v)); });
    root.appendChild(ul);
  }

  function runPage(d) {
    var cells = d.cells || [];
    var sides = [];
    cells.forEach(function (c) {
      sides.push({ label: cellName(c) + " sender", p: c.sender });
      sides.push({ label: cellName(c) + " receiver", p: c.receiver });
    });
    section("CPU by path", "Exact on-CPU time of each side's threads, split by path of the taxonomy (softirq work that ran inside the threads is its own path).");
    byPath(sides, "cpu-by-path");
    section("CPU by category");
    if (!byCategory(sides, "cpu-by-category")) {
      root.appendChild(el("p", "No categories in this result: run with --html or --pprof and without --repeat to sample kernel stacks.", "note"));
    }
    section("Throughput");
    chart("throughput", "bar", cells.map(cellName), [{ label: "throughput (Gbit/s)",
      data: cells.map(function (c) { return c.throughput_bps / 1e9; }) }], { unit: "Gbit/s" });
    section("Service demand", "On-CPU time per MiB received, each side: what a byte costs.");
    chart("service-demand", "bar", cells.map(cellName), [
      { label: "sender µs/MiB", data: cells.map(function (c) { return c.sender_ns_per_mib / 1e3; }) },
      { label: "receiver µs/MiB", data: cells.map(function (c) { return c.receiver_ns_per_mib / 1e3; }) }
    ], { unit: "µs/MiB" });
    section("Exact versus times()", "What times()/getrusage (ttcp, iperf3) would have said for the same threads: tick-sampled, softirq billed as system time.");
    exactVsTimes(sides, "exact-vs-times");
    var vs = [];
    cells.forEach(function (c) { (c.verdicts || []).forEach(function (v) { vs.push(cellName(c) + ": " + v); }); });
    verdicts(vs);
  }

  function profilePage(d) {
    var procs = (d.processes || []).map(function (p) {
      // pid 0: exited processes summed by name (exited_processes of them)
      var who = p.pid ? String(p.pid) : (p.exited_processes || 0) + " exited";
      return { label: p.comm + " (" + who + ")", p: p };
    });
    section("CPU by path", "Exact on-CPU time of each process, split by path.");
    byPath(procs, "cpu-by-path");
    section("CPU by category");
    if (!byCategory(procs, "cpu-by-category")) root.appendChild(el("p", "No categories (attribution off).", "note"));
    section("Exact versus times()");
    exactVsTimes(procs, "exact-vs-times");
    var vs = [];
    (d.processes || []).forEach(function (p) { if (p.zerocopy && p.zerocopy.verdict) vs.push(p.comm + ": " + p.zerocopy.verdict); });
    verdicts(vs);
  }

  function comparePage(r) {
    r.comparisons.forEach(function (c, ci) {
      c.pairs.forEach(function (p, pi) {
        var title = p.base === p.new ? p.base : p.base + " vs " + p.new;
        section(c.base + " → " + c.new + ": " + title, r.test + ", α = " + r.alpha + ". Bars: change of each figure's mean; red: significant.");
        var rows = p.rows.filter(function (x) { return x.delta_pct !== undefined && x.delta_pct !== null; });
        var ch = chart("delta-" + ci + "-" + pi, "bar", rows.map(function (x) { return x.label; }),
          [{ label: "change %", data: rows.map(function (x) { return x.delta_pct; }),
             backgroundColor: rows.map(function (x) { return x.significant ? "#e15759" : (x.testable ? "#bab0ac" : "#d8d8d8"); }) }],
          { unit: "%", horizontal: true });
        ch.canvas.parentNode.style.height = Math.max(240, 18 * rows.length) + "px";
        ch.resize();
        var t = el("table");
        var h = el("tr");
        ["figure", "base", "new", "delta", "p"].forEach(function (x) { h.appendChild(el("th", x)); });
        t.appendChild(h);
        p.rows.forEach(function (x) {
          var tr = el("tr");
          tr.appendChild(el("td", x.label));
          tr.appendChild(el("td", x.base.present ? x.base.mean.toPrecision(4) : "—"));
          tr.appendChild(el("td", x.new.present ? x.new.mean.toPrecision(4) : "—"));
          tr.appendChild(el("td", x.delta_pct !== undefined && x.delta_pct !== null ? x.delta_pct.toFixed(1) + "%" : "—"));
          tr.appendChild(el("td", x.testable ? x.p.toFixed(3) : "not testable", x.significant ? "sig" : ""));
          t.appendChild(tr);
        });
        root.appendChild(t);
      });
    });
  }

  document.getElementById("title").textContent = data.title;
  try {
    if (data.kind === "compare") {
      comparePage(data.compare);
    } else {
      var d = data.doc;
      document.getElementById("meta").textContent = "kernel " + d.host.kernel + ", " + d.host.cpus + " CPUs, accounting " +
        d.backends.accounting + (d.backends.attribution ? ", attribution " + d.backends.attribution : "") +
        ", BPF overhead " + (100 * d.overhead.share).toFixed(2) + "% of measured CPU";
      (data.hosts || []).forEach(function (h) { document.getElementById("meta").appendChild(el("div", h)); });
      if (data.kind === "run") runPage(d); else profilePage(d);
      (d.warnings || []).forEach(function (w) { root.appendChild(el("p", "warning: " + w, "note")); });
    }
  } catch (e) {
    window.zcErrors.push(String(e && e.stack || e));
  }

  // Self-check: which charts put pixels in their chart area.
  var status = { charts: [], errors: window.zcErrors };
  charts.forEach(function (c) {
    var a = c.chart.chartArea, ctx = c.chart.ctx, ratio = c.chart.currentDevicePixelRatio || 1, inked = 0, total = 0;
    if (a && a.right > a.left && a.bottom > a.top) {
      var img = ctx.getImageData(a.left * ratio, a.top * ratio, (a.right - a.left) * ratio, (a.bottom - a.top) * ratio).data;
      for (var i = 3; i < img.length; i += 4) { total++; if (img[i] > 0) inked++; }
    }
    status.charts.push({ id: c.id, inked: inked, pixels: total });
  });
  var s = document.getElementById("zc-status");
  s.textContent = JSON.stringify(status);
  s.setAttribute("data-done", "1");
})();
