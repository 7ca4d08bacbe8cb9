//===- ThermalSvg.cpp - kiln thermal-sim's chart ------------------------------===//
#include "compiler/tools/kiln/ThermalSvg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

namespace kiln::tool {

namespace {

constexpr double kWidth = 900, kPanelH = 200, kLeft = 70, kRight = 20, kTop = 50, kGap = 45;
const char *const kFlatColor = "#c0392b", *const kGovColor = "#1f618d";

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string escape(const std::string &s) {
  std::string o;
  for (char ch : s)
    o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : std::string(1, ch);
  return o;
}

// A nice axis top: 1, 2 or 5 times a power of ten, at least v.
double niceTop(double v) {
  if (!(v > 0))
    return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v)
      return m * p;
  return 10 * p;
}

struct Panel {
  double y0, lo, hi, seconds;
  double x(double t) const { return kLeft + (kWidth - kLeft - kRight) * t / seconds; }
  double y(double v) const { return y0 + kPanelH * (1 - (v - lo) / (hi - lo)); }
};

std::string tick(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string frame(const Panel &p, const std::string &label, int ticks) {
  std::string s = "<rect x='" + num(kLeft) + "' y='" + num(p.y0) + "' width='" +
                  num(kWidth - kLeft - kRight) + "' height='" + num(kPanelH) +
                  "' fill='none' stroke='#888'/>\n";
  for (int i = 0; i <= ticks; ++i) {
    double v = p.lo + (p.hi - p.lo) * i / ticks;
    s += "<text x='" + num(kLeft - 6) + "' y='" + num(p.y(v) + 4) +
         "' text-anchor='end' font-size='11'>" + tick(v) + "</text>\n";
  }
  s += "<text x='14' y='" + num(p.y0 + kPanelH / 2) + "' font-size='12' transform='rotate(-90 14 " +
       num(p.y0 + kPanelH / 2) + ")' text-anchor='middle'>" + label + "</text>\n";
  return s;
}

std::string line(const Panel &p, const codegen::ThermalRun &r,
                 const std::function<double(const codegen::ThermalSample &)> &f,
                 const char *color, const char *dash) {
  std::string pts;
  for (const codegen::ThermalSample &x : r.samples)
    pts += num(p.x(x.t)) + "," + num(p.y(std::clamp(f(x), p.lo, p.hi))) + " ";
  return std::string("<polyline fill='none' stroke='") + color + "' stroke-width='1.6'" +
         (*dash ? std::string(" stroke-dasharray='") + dash + "'" : "") + " points='" + pts +
         "'/>\n";
}

// A threshold line, labelled at the right end (or the left, for a second one close by).
std::string hline(const Panel &p, double v, const std::string &label, bool left) {
  return "<line x1='" + num(kLeft) + "' x2='" + num(kWidth - kRight) + "' y1='" + num(p.y(v)) +
         "' y2='" + num(p.y(v)) + "' stroke='#555' stroke-dasharray='2 3'/>\n<text x='" +
         num(left ? kLeft + 4 : kWidth - kRight - 4) + "' y='" + num(p.y(v) - 3) +
         "' text-anchor='" + (left ? "start" : "end") + "' font-size='10' fill='#555'>" +
         label + "</text>\n";
}

} // namespace

std::string thermalSvg(const ThermalChart &c) {
  const codegen::ThermalRun &a = *c.flat, &b = *c.governed;
  double tokTop = 0, tempTop = c.throttleSkinC, tempLo = 1e9;
  for (const auto *r : {&a, &b})
    for (const codegen::ThermalSample &x : r->samples) {
      tokTop = std::max(tokTop, x.tokS);
      tempTop = std::max(tempTop, x.dieC);
      tempLo = std::min(tempLo, x.skinC);
    }
  const double h = kTop + 3 * kPanelH + 2 * kGap + 50;
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + num(kWidth) +
                  "' height='" + num(h) + "' font-family='sans-serif'>\n"
                  "<rect width='100%' height='100%' fill='white'/>\n<text x='" + num(kLeft) +
                  "' y='22' font-size='14'>" + escape(c.title) + "</text>\n";
  s += std::string("<text x='") + num(kLeft) + "' y='40' font-size='12'><tspan fill='" +
       kFlatColor + "'>&#9644; no governor</tspan>   <tspan fill='" + kGovColor +
       "'>&#9644; governor</tspan>   (temperature: skin solid, die dashed)</text>\n";
  Panel tok{kTop, 0, niceTop(tokTop), c.seconds};
  s += frame(tok, "tokens/s", 4);
  s += line(tok, a, [](const auto &x) { return x.tokS; }, kFlatColor, "");
  s += line(tok, b, [](const auto &x) { return x.tokS; }, kGovColor, "");
  const double tLo = std::floor(tempLo / 5) * 5;
  Panel temp{kTop + kPanelH + kGap, tLo, tLo + 20 * std::ceil((tempTop - tLo) / 20), c.seconds};
  s += frame(temp, "temperature (C)", 4);
  s += hline(temp, c.throttleSkinC, "OS skin trip " + tick(c.throttleSkinC) + " C", false);
  if (c.ceilingC > 0)
    s += hline(temp, c.ceilingC, "governor ceiling " + tick(c.ceilingC) + " C", true);
  for (const auto *r : {&a, &b}) {
    const char *color = r == &a ? kFlatColor : kGovColor;
    s += line(temp, *r, [](const auto &x) { return x.skinC; }, color, "");
    s += line(temp, *r, [](const auto &x) { return x.dieC; }, color, "5 3");
  }
  Panel clk{kTop + 2 * (kPanelH + kGap), 0, 1, c.seconds};
  s += frame(clk, "clock cap / threads", 4);
  s += line(clk, a, [](const auto &x) { return x.clock; }, kFlatColor, "");
  s += line(clk, b, [](const auto &x) { return x.clock; }, kGovColor, "");
  const double most = c.maxThreads ? double(c.maxThreads) : 1;
  s += line(clk, b, [most](const auto &x) { return x.threads / most; }, kGovColor, "1 3");
  s += "<text x='" + num(kLeft + 4) + "' y='" + num(clk.y0 + kPanelH - 6) +
       "' font-size='10' fill='#555'>solid: the OS's clock cap (share of top clock); dotted: "
       "governor's threads / " + tick(most) + "</text>\n";
  for (int i = 0; i <= 10; ++i) {
    double t = c.seconds * i / 10;
    s += "<text x='" + num(clk.x(t)) + "' y='" + num(clk.y0 + kPanelH + 16) +
         "' text-anchor='middle' font-size='11'>" + tick(t) + "</text>\n";
  }
  s += "<text x='" + num(kWidth / 2) + "' y='" + num(clk.y0 + kPanelH + 34) +
       "' text-anchor='middle' font-size='12'>seconds</text>\n</svg>\n";
  return s;
}

} // namespace kiln::tool
