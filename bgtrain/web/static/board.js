// The board, drawn by hand in SVG: points, checkers, bar, borne-off trays, dice, cube and the rings
// that mark where a chosen checker can go. Plain JavaScript, no build step.
//
// Geometry (viewBox units). The person's home board is bottom right, as in GNU Backgammon: points
// 1..6 bottom right (1 at the far right), 7..12 bottom left, 13..18 top left, 19..24 top right.
// The cube sits left of the board (centred in the middle, owned at its owner's side), the trays
// right of it (the person's at the bottom), the person's dice on the right half.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const G = {
  width: 1000, height: 640,
  left: 90, pointWidth: 60, barWidth: 70, trayLeft: 840, trayWidth: 70,
  top: 30, bottom: 610, pointHeight: 250, radius: 25,
};
G.barLeft = G.left + 6 * G.pointWidth;            // 450
G.rightHalf = G.barLeft + G.barWidth;             // 520
G.boardRight = G.rightHalf + 6 * G.pointWidth;    // 880
G.trayLeft = G.boardRight + 20;                   // 900
G.middle = (G.top + G.bottom) / 2;                // 320
G.width = G.trayLeft + G.trayWidth + 20;

const COLOURS = {
  frame: "#5a3b1f", felt: "#2c5a3b", pointLight: "#d9bf8c", pointDark: "#8c2f24", bar: "#4a2f18",
  tray: "#3b2714", you: "#f3ecdc", youEdge: "#6b5a45", bot: "#2b2523", botEdge: "#0d0b0a",
  ringSingle: "#ffd21f", ringCombined: "#29d9ff", selected: "#ff5ad1", numbers: "#f1e6cf",
};

function element(name, attributes, parent) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

// Centre x of a point (person's numbering 1..24) and whether it is on the top row.
function pointX(p) {
  if (p <= 6) return G.rightHalf + (6 - p) * G.pointWidth + G.pointWidth / 2;
  if (p <= 12) return G.left + (12 - p) * G.pointWidth + G.pointWidth / 2;
  if (p <= 18) return G.left + (p - 13) * G.pointWidth + G.pointWidth / 2;
  return G.rightHalf + (p - 19) * G.pointWidth + G.pointWidth / 2;
}
function isTop(p) { return p >= 13; }

// Centre y of the slot-th checker (0 = at the edge) on a point.
function slotY(p, slot) {
  const step = 2 * G.radius;
  return isTop(p) ? G.top + G.radius + slot * step : G.bottom - G.radius - slot * step;
}

const PIPS = {
  1: [[0, 0]], 2: [[-1, -1], [1, 1]], 3: [[-1, -1], [0, 0], [1, 1]],
  4: [[-1, -1], [1, -1], [-1, 1], [1, 1]], 5: [[-1, -1], [1, -1], [0, 0], [-1, 1], [1, 1]],
  6: [[-1, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [1, 1]],
};

class BoardView {
  // onSelect(source) and onTarget(target) are called on clicks (and drops) on the board.
  constructor(svg, handlers) {
    this.svg = svg;
    this.handlers = handlers;
    svg.setAttribute("viewBox", `0 0 ${G.width} ${G.height}`);
    this.state = null;
    this.selected = null;
    this.showRings = true;
    this.botDice = null;
    svg.addEventListener("pointerdown", (event) => this.pointerDown(event));
    svg.addEventListener("pointerup", (event) => this.pointerUp(event));
    svg.addEventListener("pointermove", (event) => this.pointerMove(event));
  }

  // --- input: click a checker, then a ring; or drag the checker onto a ring ----------------------

  svgPoint(event) {
    const point = this.svg.createSVGPoint();
    point.x = event.clientX; point.y = event.clientY;
    return point.matrixTransform(this.svg.getScreenCTM().inverse());
  }

  // The place under (x, y): a point 1..24, 25 (bar), 0 (the person's tray) or null.
  placeAt(x, y) {
    if (x >= G.trayLeft && x <= G.trayLeft + G.trayWidth && y > G.middle) return 0;
    if (x >= G.barLeft && x <= G.rightHalf) return 25;
    const inLeft = x >= G.left && x < G.barLeft, inRight = x >= G.rightHalf && x < G.boardRight;
    if (!inLeft && !inRight || y < G.top || y > G.bottom) return null;
    const column = Math.floor((x - (inLeft ? G.left : G.rightHalf)) / G.pointWidth);
    const top = y < G.middle;
    if (inLeft) return top ? 13 + column : 12 - column;
    return top ? 19 + column : 6 - column;
  }

  sourceAt(x, y) {
    const place = this.placeAt(x, y);
    const board = this.state && this.state.board;
    if (!board) return null;
    if (place === 25) return board.bar.you > 0 ? 25 : (board.hand.you > 0 ? 26 : null);
    if (place === 0 && board.hand.you > 0 && y < G.middle + 60) return 26;
    if (place && board.points[place] > 0) return place;
    return null;
  }

  pointerDown(event) {
    if (!this.state || this.state.phase !== "move") return;
    const p = this.svgPoint(event);
    const hand = event.target.closest("[data-hand]");
    const ring = event.target.closest(".ring");
    if (ring && this.selected !== null) { this.handlers.onTarget(Number(ring.dataset.target)); return; }
    const source = hand ? 26 : this.sourceAt(p.x, p.y);
    if (source !== null && this.state.destinations[source]) {
      this.selected = this.selected === source ? null : source;
      this.dragFrom = this.selected;
      this.draw();
    } else if (this.selected !== null) {
      const place = this.placeAt(p.x, p.y);
      const targets = (this.state.destinations[this.selected] || []).map((o) => o.target);
      if (place !== null && targets.includes(place)) this.handlers.onTarget(place);
    }
  }

  pointerMove(event) {
    if (this.dragFrom == null || !(event.buttons & 1)) return;
    const p = this.svgPoint(event);
    if (!this.ghost) this.ghost = element("circle", {r: G.radius, class: "ghost", fill: COLOURS.you,
      stroke: COLOURS.selected, "stroke-width": 3, opacity: 0.8, "pointer-events": "none"}, this.svg);
    this.ghost.setAttribute("cx", p.x); this.ghost.setAttribute("cy", p.y);
  }

  pointerUp(event) {
    const from = this.dragFrom;
    this.dragFrom = null;
    if (this.ghost) { this.ghost.remove(); this.ghost = null; } else return;
    const p = this.svgPoint(event);
    const place = this.placeAt(p.x, p.y);
    const targets = (this.state.destinations[from] || []).map((o) => o.target);
    if (place !== null && place !== from && targets.includes(place)) this.handlers.onTarget(place);
  }

  // --- drawing -----------------------------------------------------------------------------------

  show(state) {
    // Every new state from the server starts with nothing selected: a click selects, a second
    // click on the same checker lets go of it.
    this.state = state;
    this.selected = null;
    this.draw();
  }

  draw(boardOverride) {
    const svg = this.svg, state = this.state;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    if (!state) return;
    const board = boardOverride || state.board;
    element("rect", {x: 0, y: 0, width: G.width, height: G.height, rx: 14, fill: COLOURS.frame}, svg);
    for (const left of [G.left, G.rightHalf])
      element("rect", {x: left, y: G.top, width: 6 * G.pointWidth, height: G.bottom - G.top, fill: COLOURS.felt}, svg);
    element("rect", {x: G.barLeft, y: G.top, width: G.barWidth, height: G.bottom - G.top,
      fill: COLOURS.bar}, svg);
    for (const [y, h] of [[G.top, G.middle - G.top - 10], [G.middle + 10, G.bottom - G.middle - 10]])
      element("rect", {x: G.trayLeft, y, width: G.trayWidth, height: h, rx: 6, fill: COLOURS.tray,
        stroke: "#2a1a0c", "stroke-width": 2}, svg);
    this.drawPoints(svg);
    for (let p = 1; p <= 24; p++) this.drawStack(svg, p, board.points[p]);
    this.drawBar(svg, board);
    this.drawTrays(svg, board);
    this.drawCube(svg);
    this.drawDice(svg);
    if (this.selected !== null && this.showRings) this.drawRings(svg, board);
    else if (this.selected !== null) this.drawSelection(svg, board);
  }

  drawPoints(svg) {
    for (let p = 1; p <= 24; p++) {
      const x = pointX(p), half = G.pointWidth / 2 - 2;
      const base = isTop(p) ? G.top : G.bottom;
      const tip = isTop(p) ? G.top + G.pointHeight : G.bottom - G.pointHeight;
      const fill = p % 2 ? COLOURS.pointDark : COLOURS.pointLight;
      element("polygon", {points: `${x - half},${base} ${x + half},${base} ${x},${tip}`, fill,
        class: "point", "data-point": p}, svg);
      const label = element("text", {x, y: isTop(p) ? G.top - 9 : G.bottom + 21, "text-anchor": "middle",
        class: "point-number", fill: COLOURS.numbers}, svg);
      label.textContent = p;
    }
  }

  checker(svg, x, y, mine, extra) {
    const g = element("g", {class: mine ? "checker you" : "checker bot"}, svg);
    element("circle", {cx: x, cy: y, r: G.radius - 1, fill: mine ? COLOURS.you : COLOURS.bot,
      stroke: mine ? COLOURS.youEdge : COLOURS.botEdge, "stroke-width": 2}, g);
    element("circle", {cx: x, cy: y, r: G.radius - 8, fill: "none", stroke: mine ? "#cfc4ad" : "#4a403c",
      "stroke-width": 2}, g);
    if (extra) {
      const t = element("text", {x, y: y + 6, "text-anchor": "middle", class: "stack-count",
        fill: mine ? "#3b2f22" : "#f3ecdc"}, g);
      t.textContent = extra;
    }
    return g;
  }

  drawStack(svg, p, count) {
    const n = Math.abs(count);
    for (let i = 0; i < Math.min(n, 5); i++) {
      const g = this.checker(svg, pointX(p), slotY(p, i), count > 0, i === 4 && n > 5 ? n : 0);
      g.setAttribute("data-point", p);
    }
  }

  barY(mine, i) {
    // The person's checkers wait in the upper half of the bar (they enter the top right), the bot's below.
    return mine ? G.middle - 45 - i * 2 * G.radius : G.middle + 45 + i * 2 * G.radius;
  }

  drawBar(svg, board) {
    const x = G.barLeft + G.barWidth / 2;
    for (const [mine, n] of [[true, board.bar.you], [false, board.bar.bot]])
      for (let i = 0; i < Math.min(n, 4); i++) {
        const g = this.checker(svg, x, this.barY(mine, i), mine, i === 3 && n > 4 ? n : 0);
        g.setAttribute("data-point", mine ? 25 : -25);
      }
  }

  drawTrays(svg, board) {
    const slab = 15, x = G.trayLeft + 7, w = G.trayWidth - 14;
    // Whose tray is whose: the person bears off into the lower one, the bot into the upper one.
    for (const [label, y] of [["you", G.bottom + 21], ["bot", G.top - 9]])
      element("text", {x: G.trayLeft + G.trayWidth / 2, y, "text-anchor": "middle", class: `tray-label ${label}`,
        fill: COLOURS.numbers}, svg).textContent = label;
    for (let i = 0; i < board.off.you; i++)
      element("rect", {x, y: G.bottom - 6 - (i + 1) * slab, width: w, height: slab - 3, rx: 3,
        fill: COLOURS.you, stroke: COLOURS.youEdge, class: "off you"}, svg);
    for (let i = 0; i < board.off.bot; i++)
      element("rect", {x, y: G.top + 6 + i * slab, width: w, height: slab - 3, rx: 3,
        fill: COLOURS.bot, stroke: "#6a5d57", class: "off bot"}, svg);
    // Checkers not yet entered (Dutch, acey-deucey): a badge by each tray, clickable for the person.
    for (const [mine, n] of [[true, board.hand.you], [false, board.hand.bot]]) {
      if (!n) continue;
      const y = mine ? G.middle + 40 : G.middle - 40;
      const g = element("g", mine ? {"data-hand": 1, class: "hand"} : {class: "hand"}, svg);
      this.checker(g, G.trayLeft + G.trayWidth / 2, y, mine, n);
    }
  }

  drawCube(svg) {
    const cube = this.state.cube;
    if (!cube.used) return;
    const size = 50, x = 45;
    const y = cube.owner === "bot" ? G.top + 30 : cube.owner === "you" ? G.bottom - 30 : G.middle;
    const g = element("g", {class: "cube", "data-owner": cube.owner}, svg);
    element("rect", {x: x - size / 2, y: y - size / 2, width: size, height: size, rx: 7, fill: "#f7f3e8",
      stroke: "#222", "stroke-width": 2}, g);
    const t = element("text", {x, y: y + 9, "text-anchor": "middle", class: "cube-value"}, g);
    t.textContent = cube.owner === "centred" && cube.value === 1 ? 64 : cube.value;
  }

  die(svg, x, y, value, faded, mine) {
    const size = 46;
    const g = element("g", {class: "die", opacity: faded ? 0.35 : 1, "data-value": value}, svg);
    element("rect", {x: x - size / 2, y: y - size / 2, width: size, height: size, rx: 8,
      fill: mine ? COLOURS.you : COLOURS.bot, stroke: mine ? "#5d4d3a" : "#000", "stroke-width": 2}, g);
    for (const [dx, dy] of PIPS[value])
      element("circle", {cx: x + dx * 12, cy: y + dy * 12, r: 4.5, fill: mine ? "#222" : "#f3ecdc"}, g);
  }

  drawDice(svg) {
    const state = this.state;
    if (state.dice && state.turn === "you") {
      const [a, b] = state.dice;
      const all = a === b ? [a, a, a, a] : [a, b];
      const left = [...state.dice_left];
      const shown = all.map((value) => {
        const i = left.indexOf(value);
        if (i >= 0) { left.splice(i, 1); return [value, false]; }
        return [value, true];
      });
      const start = (G.rightHalf + G.boardRight) / 2 - (shown.length - 1) * 29;
      shown.forEach(([value, used], i) => this.die(svg, start + i * 58, G.middle, value, used, true));
    } else if (this.botDice) {
      const start = (G.left + G.barLeft) / 2 - 29;
      this.botDice.forEach((value, i) => this.die(svg, start + i * 58, G.middle, value, false, false));
    }
  }

  // Where a ring for a target goes: the next free slot on the point (the blot's slot on a hit).
  targetSpot(board, target) {
    if (target === 0) return null;
    const count = board.points[target];
    const slot = Math.min(Math.max(count, 0), 4);
    return [pointX(target), slotY(target, slot)];
  }

  drawSelection(svg, board) {
    const s = this.selected;
    let x, y;
    if (s === 25) { x = G.barLeft + G.barWidth / 2; y = this.barY(true, 0); }
    else if (s === 26) { x = G.trayLeft + G.trayWidth / 2; y = G.middle + 40; }
    else { x = pointX(s); y = slotY(s, Math.min(board.points[s], 5) - 1); }
    element("circle", {cx: x, cy: y, r: G.radius + 3, fill: "none", stroke: COLOURS.selected,
      "stroke-width": 5, class: "selected"}, svg);
  }

  drawRings(svg, board) {
    this.drawSelection(svg, board);
    for (const option of this.state.destinations[this.selected] || []) {
      const colour = option.kind === "single" ? COLOURS.ringSingle : COLOURS.ringCombined;
      // A dark halo under the coloured ring keeps it visible on light and dark points alike.
      const halo = {fill: "none", stroke: "rgba(0,0,0,0.55)", "stroke-width": 10, "pointer-events": "none"};
      const attributes = {class: `ring ring-${option.kind}`, "data-target": option.target,
        "data-kind": option.kind, fill: "rgba(255,255,255,0.12)", stroke: colour, "stroke-width": 5};
      if (option.target === 0) {
        const shape = {x: G.trayLeft + 4, y: G.middle + 14, width: G.trayWidth - 8,
          height: G.bottom - G.middle - 18, rx: 8};
        element("rect", {...shape, ...halo}, svg);
        element("rect", {...shape, ...attributes}, svg);
      } else {
        const [x, y] = this.targetSpot(board, option.target);
        element("circle", {cx: x, cy: y, r: G.radius - 3, ...halo}, svg);
        element("circle", {cx: x, cy: y, r: G.radius - 3, ...attributes}, svg);
      }
    }
  }
}

window.BoardView = BoardView;
