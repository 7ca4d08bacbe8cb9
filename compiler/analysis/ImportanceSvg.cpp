//===- ImportanceSvg.cpp - the importance report drawn as one SVG file ----===//
//
// Plain SVG 1.1, no scripts or external fonts: per-layer grouped bars (each score divided
// by its largest value over the layers, so the four scores share one axis; the raw
// maxima are in the legend and every bar has a tooltip) and two heads x layers heat maps
// (head-ablation KLD, attention entropy) with a colour bar each.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <map>

#include "llvm/Support/Format.h"

#include "compiler/analysis/ImportanceReport.h"

namespace kiln::analysis {

namespace {

std::string num(double v, const char *fmt = "%.3g") {
  if (!std::isfinite(v))
    return "n/a";
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format(fmt, v);
  return s;
}

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

struct Rgb {
  int r, g, b;
};

std::string mix(Rgb lo, Rgb hi, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  auto c = [&](int a, int b) { return int(std::lround(a + (b - a) * t)); };
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("#%02x%02x%02x", c(lo.r, hi.r), c(lo.g, hi.g),
                                              c(lo.b, hi.b));
  return s;
}

double maxOf(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    if (std::isfinite(x))
      m = std::max(m, x);
  return m;
}

struct Metric {
  const char *name, *unit, *color;
  std::vector<double> values;
};

struct HeatMap {
  std::string title, unit;
  Rgb lo, hi;
  std::map<std::pair<int32_t, int32_t>, double> cells; // (layer, head) -> value
};

class Svg {
public:
  explicit Svg(llvm::raw_ostream &os) : os_(os) {}
  void text(double x, double y, const std::string &s, int size = 12, const char *anchor = "start",
            const char *extra = "") {
    os_ << llvm::format("<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\"%s>", x, y,
                        size, anchor, extra)
        << escape(s) << "</text>\n";
  }
  void rect(double x, double y, double w, double h, const std::string &fill,
            const std::string &tooltip = "", const char *extra = "") {
    os_ << llvm::format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s",
                        x, y, w, h, fill.c_str(), extra);
    if (tooltip.empty())
      os_ << "/>\n";
    else
      os_ << "><title>" << escape(tooltip) << "</title></rect>\n";
  }
  void line(double x1, double y1, double x2, double y2, const char *stroke) {
    os_ << llvm::format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                        x1, y1, x2, y2, stroke);
  }
  llvm::raw_ostream &raw() { return os_; }

private:
  llvm::raw_ostream &os_;
};

} // namespace

void writeImportanceSvg(const ImportanceReport &r, const ReportSource &src, llvm::raw_ostream &os) {
  const size_t numLayers = r.layers.size();
  std::vector<Metric> metrics = {
      {"layer ablation KLD", "nats", "#c0392b", {}},
      {"layer ablation PPL increase", "PPL", "#e67e22", {}},
      {"block influence (1 - cos)", "", "#2471a3", {}},
      {"gradient |dL/dg|", "", "#229954", {}},
  };
  for (const LayerScore &s : r.layers) {
    metrics[0].values.push_back(s.ablationKld);
    metrics[1].values.push_back(std::max(0.0, s.ablationPpl - r.basePpl));
    metrics[2].values.push_back(s.blockInfluence);
    metrics[3].values.push_back(s.gradientScore);
  }

  // ---- Geometry.
  const double margin = 24, axisX = 64;
  const double groupW = std::clamp(720.0 / double(std::max<size_t>(numLayers, 1)), 36.0, 150.0);
  const double barW = groupW * 0.8 / double(metrics.size());
  const double chartTop = 120, chartH = 200;
  const double chartW = groupW * double(numLayers);
  const double legendTop = chartTop + chartH + 44;
  const double legendH = 20.0 * double(metrics.size());

  int32_t maxHeads = 0;
  for (const HeadScore &h : r.heads)
    maxHeads = std::max(maxHeads, h.head + 1);
  HeatMap kldMap{"Head ablation KLD (nats)", "nats", {255, 245, 235}, {127, 39, 4}, {}};
  HeatMap entMap{"Attention entropy (nats)", "nats", {247, 251, 255}, {8, 48, 107}, {}};
  for (const HeadScore &h : r.heads) {
    kldMap.cells[{h.layer, h.head}] = h.ablationKld;
    entMap.cells[{h.layer, h.head}] = h.entropy;
  }
  const double cellW = std::clamp(440.0 / double(std::max<size_t>(numLayers, 1)), 12.0, 56.0);
  const double cellH = std::clamp(320.0 / double(std::max(maxHeads, 1)), 8.0, 26.0);
  const bool cellText = cellW >= 40 && cellH >= 16;
  const double mapW = cellW * double(numLayers), mapH = cellH * double(maxHeads);
  const double mapsTop = legendTop + legendH + 30;
  const double mapGap = 110;
  const double mapX[2] = {axisX, axisX + mapW + mapGap};
  const double width = std::max({axisX + chartW + 40, mapX[1] + mapW + margin, 720.0});
  const double height =
      r.heads.empty() ? legendTop + legendH + margin : mapsTop + 24 + mapH + 34 + 12 + 40;

  Svg svg(os);
  os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
                     width, height, width, height);
  svg.rect(0, 0, width, height, "#ffffff");
  svg.text(margin, 30, "kiln analyze: layer and head importance", 18, "start",
           " font-weight=\"bold\"");
  svg.text(margin, 50, "model " + src.model + ", base PPL " + num(r.basePpl, "%.4f"), 12);
  svg.text(margin, 66,
           "calibration " + src.calibration + ": " + std::to_string(r.chunks) + " chunks of " +
               std::to_string(r.ctx) + " tokens, " + std::to_string(r.scored) + " scored positions",
           12);
  svg.text(margin, 82,
           "Spearman with ablation KLD: block influence " +
               num(r.blockInfluenceVsAblation, "%+.3f") + ", gradient " +
               num(r.gradientVsAblation, "%+.3f") + ", head entropy " +
               num(r.headEntropyVsAblation, "%+.3f"),
           12);

  // ---- Per-layer bars.
  svg.text(axisX, chartTop - 12,
           "Per-layer scores, each divided by its largest value (higher = more important)", 13,
           "start", " font-weight=\"bold\"");
  for (int i = 0; i <= 4; ++i) {
    const double y = chartTop + chartH - chartH * i / 4.0;
    svg.line(axisX, y, axisX + chartW, y, i == 0 ? "#333333" : "#dddddd");
    svg.text(axisX - 6, y + 4, num(i / 4.0, "%.2f"), 10, "end");
  }
  for (size_t l = 0; l < numLayers; ++l) {
    const double gx = axisX + groupW * double(l) + groupW * 0.1;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const double mx = maxOf(metrics[m].values), v = metrics[m].values[l];
      const double frac = mx > 0 && std::isfinite(v) ? v / mx : 0.0;
      const double h = chartH * frac, x = gx + barW * double(m);
      svg.rect(x, chartTop + chartH - h, barW - 1, h, metrics[m].color,
               "layer " + std::to_string(r.layers[l].layer) + ": " + metrics[m].name + " = " +
                   num(v, "%.5g") + " " + metrics[m].unit);
      if (barW >= 16)
        svg.text(x + barW / 2, chartTop + chartH - h - 3, num(frac, "%.2f"), 8, "middle");
    }
    svg.text(axisX + groupW * (double(l) + 0.5), chartTop + chartH + 16,
             "layer " + std::to_string(r.layers[l].layer), 11, "middle");
  }
  for (size_t m = 0; m < metrics.size(); ++m) {
    const double y = legendTop + 20.0 * double(m);
    svg.rect(axisX, y - 10, 12, 12, metrics[m].color);
    svg.text(axisX + 18, y,
             std::string(metrics[m].name) + " (1.00 = " + num(maxOf(metrics[m].values), "%.4g") +
                 (metrics[m].unit[0] ? std::string(" ") + metrics[m].unit : "") + ")",
             11);
  }

  // ---- Heat maps.
  if (!r.heads.empty()) {
    const HeatMap *maps[2] = {&kldMap, &entMap};
    for (int k = 0; k < 2; ++k) {
      const HeatMap &hm = *maps[k];
      const double x0 = mapX[k], y0 = mapsTop + 24;
      double lo = 0, hi = 0;
      bool first = true;
      for (const auto &[key, v] : hm.cells) {
        lo = first ? v : std::min(lo, v);
        hi = first ? v : std::max(hi, v);
        first = false;
      }
      // KLD is anchored at 0 (no effect); entropy spans its observed range.
      if (k == 0)
        lo = 0;
      const double span = hi > lo ? hi - lo : 1.0;
      svg.text(x0, mapsTop + 8, hm.title + ", heads x layers", 13, "start",
               " font-weight=\"bold\"");
      for (int32_t h = 0; h < maxHeads; ++h)
        svg.text(x0 - 6, y0 + cellH * (h + 0.5) + 4, "head " + std::to_string(h), 10, "end");
      for (size_t l = 0; l < numLayers; ++l) {
        const int32_t layer = r.layers[l].layer;
        svg.text(x0 + cellW * (double(l) + 0.5), y0 + mapH + 14, "L" + std::to_string(layer), 10,
                 "middle");
        for (int32_t h = 0; h < maxHeads; ++h) {
          const double x = x0 + cellW * double(l), y = y0 + cellH * double(h);
          auto it = hm.cells.find({layer, h});
          if (it == hm.cells.end()) {
            svg.rect(x, y, cellW, cellH, "#eeeeee",
                     "layer " + std::to_string(layer) + " head " + std::to_string(h) + ": absent");
            continue;
          }
          const double t = (it->second - lo) / span;
          svg.rect(x, y, cellW, cellH, mix(hm.lo, hm.hi, t),
                   "layer " + std::to_string(layer) + " head " + std::to_string(h) + ": " +
                       num(it->second, "%.5g") + " " + hm.unit,
                   " stroke=\"#ffffff\" stroke-width=\"1\"");
          if (cellText)
            svg.text(x + cellW / 2, y + cellH / 2 + 3, num(it->second, "%.2g"), 9, "middle",
                     t > 0.55 ? " fill=\"#ffffff\"" : "");
        }
      }
      // Colour bar: 10 steps from the low to the high end.
      const double by = y0 + mapH + 26, bw = std::max(mapW, 120.0);
      for (int s = 0; s < 10; ++s)
        svg.rect(x0 + bw * s / 10.0, by, bw / 10.0 + 0.5, 10, mix(hm.lo, hm.hi, (s + 0.5) / 10));
      svg.text(x0, by + 22, num(lo, "%.3g"), 10, "start");
      svg.text(x0 + bw, by + 22, num(hi, "%.3g") + " " + hm.unit, 10, "end");
    }
  }
  os << "</svg>\n";
}

} // namespace kiln::analysis
