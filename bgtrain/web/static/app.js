// The page: one WebSocket to the server, which decides everything; this file sends the person's
// requests, plays the server's events back (the bot's checker moves one by one) and fills the panels.
"use strict";

const $ = (id) => document.getElementById(id);
let socket = null, state = null, busy = false, queue = [], clockDeadline = null;
// The tutor holds back the last roll/double/take/pass/confirm: it is resent with force on request.
let lastTutored = null;
// A request of this page is on its way and its answer has not come: no second request is sent
// against the state it will replace, and body[data-busy] says "yes" (what tests wait on) from the
// moment of sending, not only while the answer is played back.
let awaiting = false;

const board = new BoardView($("board"), {
  onTarget: (target) => send({action: "move", from: board.selected, to: target}),
});

function send(message) {
  if (busy || awaiting || !socket || socket.readyState !== WebSocket.OPEN) return;
  if (["roll", "double", "take", "pass", "confirm"].includes(message.action)) lastTutored = message;
  awaiting = true;
  document.body.dataset.busy = "yes";
  socket.send(JSON.stringify(message));
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws`);
  // The server answers every request once; any message (an answer, or the clock's or another tab's
  // update, which replaces the state as well) ends the wait.
  socket.onmessage = (message) => { awaiting = false; queue.push(JSON.parse(message.data)); if (!busy) drain(); };
  socket.onclose = () => {
    awaiting = false;
    setStatus("connection lost: reconnecting...", true);
    setTimeout(connect, 1000);
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function drain() {
  busy = true;
  while (queue.length) {
    const answer = queue.shift();
    if (answer.type === "refused") {
      setStatus(answer.message, true);
      if (answer.update) await playUpdate(answer.update);
    } else if (answer.type === "hint") {
      showHint(answer.hint);
    } else if (answer.type === "update") {
      await playUpdate(answer);
    }
  }
  busy = false;
  document.body.dataset.busy = awaiting ? "yes" : "no";
}

async function playUpdate(update) {
  document.body.dataset.busy = "yes";
  let tutored = null;
  if (review) closeReview();
  for (const event of update.events) {
    // The server writes every log line (and keeps them for a reopened tab): shown as the event plays.
    if (event.log) log(event.log);
    if (event.type === "step") {
      board.draw(event.board);
      await sleep(event.who === "bot" ? 420 : 200);
    } else if (event.type === "roll" && event.who === "bot") {
      board.botDice = event.dice;
      board.draw(board.lastBoard);
      await sleep(350);
    } else if (event.type === "opening") {
      // The side with the higher die plays both: the bot's opening dice stay shown on its side.
      board.botDice = event.bot > event.you ? [event.bot, event.you] : null;
    } else if (event.type === "tutor") {
      tutored = event;
    }
  }
  state = update.state;
  if (state.turn === "you" && state.dice) board.botDice = null;
  board.lastBoard = state.board;
  board.show(state);
  render();
  renderLog(state.log);
  if (tutored) showTutor(tutored);
}

function log(text) {
  const line = document.createElement("div");
  line.textContent = text;
  $("log").prepend(line);
}

function renderLog(lines) {
  const panel = $("log");
  panel.innerHTML = "";
  for (const text of lines || []) log(text);
}

function setStatus(text, refusal) {
  $("status").textContent = text;
  $("status").className = refusal ? "refusal" : "";
}

const fmt = (x, digits = 3) => (x === null || x === undefined ? "-" : (x >= 0 ? "+" : "") + x.toFixed(digits));
const pct = (x) => (100 * x).toFixed(1) + "%";

function render() {
  const s = state;
  const names = s.names;
  $("score").textContent = scoreText(s);
  $("pips").textContent = `pips: you ${s.board.pips.you}, bot ${s.board.pips.bot}`;
  $("info").textContent = `${s.variant} - ${s.model} at ${s.ply}-ply - game ${s.game_number}`;
  $("cube").textContent = s.cube.used ? `cube ${s.cube.value} (${s.cube.owner})` : "no cube";
  const turnText = {opening: "roll to start", roll: s.turn === "you" ? "your turn: roll or double" : "bot's turn",
    move: `your move: ${s.dice ? s.dice.join("-") : ""}`, doubled: `the bot doubles to ${2 * s.cube.value}: take or pass?`,
    game_over: "game over", match_over: "match over"}[s.phase];
  $("turn").textContent = turnText;
  setStatus(s.waiting_for || "", false);
  const show = (id, on) => { $(id).disabled = !on; };
  show("roll", s.phase === "opening" || (s.phase === "roll" && s.turn === "you"));
  show("double", s.cube.can_double);
  show("take", s.phase === "doubled");
  show("pass", s.phase === "doubled");
  show("undo", s.can_undo);
  show("confirm", s.can_confirm);
  show("hint", (s.phase === "move" || s.phase === "doubled" || (s.phase === "roll" && s.cube.can_double)));
  show("resign", ["roll", "move", "doubled"].includes(s.phase));
  show("next", s.phase === "game_over" || s.phase === "match_over");
  $("next").textContent = s.phase === "match_over" ? "New match" : "Next game";
  const choices = $("doubles");
  choices.innerHTML = "";
  for (const die of s.double_choices) {
    const button = document.createElement("button");
    button.textContent = `${die}-${die}`;
    button.onclick = () => send({action: "choose_double", die});
    choices.appendChild(button);
  }
  $("tutor").checked = s.settings.tutor;
  $("forced").checked = s.settings.auto_play_forced;
  $("threshold").value = String(s.settings.tutor_threshold);
  $("clock-seconds").value = s.settings.clock_seconds || "";
  $("clock-action").value = s.settings.clock_action;
  $("clock-cube").checked = s.settings.clock_cube;
  $("position").placeholder = s.setup ? `from ${s.setup}` : "position ID or XGID";
  clockDeadline = s.clock ? performance.now() + 1000 * s.clock.seconds_left : null;
  tickClock();
  renderRecord();
  renderResult();
  $("hint-panel").innerHTML = "";
}

// A match score reads as one: the match length, each side's points and what each still needs.
function scoreText(s) {
  const names = s.names, score = s.score;
  if (!score.length)
    return `money: ${names.you} ${score.you} - ${score.bot} ${names.bot}${s.settings.jacoby && s.cube.used ? " (Jacoby)" : ""}`;
  const text = `match to ${score.length}: ${names.you} ${score.you} - ${score.bot} ${names.bot}`;
  if (s.phase === "match_over")
    return `${text}, ${score.you >= score.length ? names.you : names.bot} won the match`;
  return `${text} (${names.you} need${names.you === "you" ? "" : "s"} ${score.length - score.you}, `
    + `${names.bot} needs ${score.length - score.bot}${score.crawford ? "; Crawford game: no doubling" : ""})`;
}

function tickClock() {
  const clock = $("clock");
  const cube = state && state.settings.clock_cube;
  if (clockDeadline === null) {
    clock.textContent = state && state.settings.clock_seconds
      ? `clock: ${state.settings.clock_seconds} s per checker play` + (cube ? " and per cube decision" : "; cube decisions untimed")
      : "clock off";
    clock.className = "";
    return;
  }
  const left = Math.max(0, (clockDeadline - performance.now()) / 1000);
  const action = state.settings.clock_action === "lose" ? "the game is lost" : "the best play is made for you";
  const what = state.phase === "move" ? "this play" : "this cube decision";
  clock.textContent = `${left.toFixed(0)} s left for ${what} (at zero ${action})`;
  clock.className = left < 10 ? "urgent" : "";
}
setInterval(tickClock, 200);

function renderRecord() {
  const body = $("record");
  body.innerHTML = "";
  for (const row of state.record) {
    const tr = document.createElement("tr");
    for (const text of [row.who, row.text, row.position_id || "", row.match_id || ""]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function renderResult() {
  const panel = $("analysis");
  panel.innerHTML = "";
  const result = state.result;
  if (!result) return;
  const analysis = result.analysis;
  const title = document.createElement("h3");
  title.textContent = `${result.winner === "you" ? "You win" : "The bot wins"} ${result.points} point(s)`
    + (result.match_over ? " and the match" : "") + ` - analysis at ${analysis.ply}-ply`;
  panel.appendChild(title);
  if (analysis.timeline) panel.appendChild(equityGraph(analysis.timeline));
  if (analysis.review && analysis.review.length) {
    const button = document.createElement("button");
    button.id = "review-open";
    button.textContent = "Review the game, move by move";
    button.onclick = () => openReview(0);
    panel.appendChild(button);
  }
  for (const side of analysis.sides) {
    const p = document.createElement("p");
    const m = side.marks;
    p.textContent = `${side.name}: error rate ${side.error_rate.toFixed(1)} (thousandths per decision, ${side.decisions} decisions), `
      + `${m["very bad"]} very bad, ${m.bad} bad, ${m.doubtful} doubtful`;
    panel.appendChild(p);
    if (side.luck) {
      const luck = document.createElement("p");
      luck.className = "luck";
      const l = side.luck, lm = l.marks;
      luck.textContent = `${side.name}: luck ${fmt(l.total)} over ${l.rolls} rolls (${fmt(l.rate, 1)} thousandths per roll; `
        + `${lm["very lucky"]} very lucky, ${lm.lucky} lucky, ${lm.unlucky} unlucky, ${lm["very unlucky"]} very unlucky)`;
      panel.appendChild(luck);
    }
    const list = document.createElement("ul");
    for (const mistake of side.mistakes) {
      const li = document.createElement("li");
      li.textContent = `${mistake.text}: loses ${mistake.loss.toFixed(3)} (${mistake.mark}) - ${mistake.position_id}:${mistake.match_id}`;
      const step = reviewStepAt(mistake.index);
      if (step !== null) { li.className = "link"; li.title = "review this move"; li.onclick = () => openReview(step); }
      list.appendChild(li);
    }
    panel.appendChild(list);
  }
  const note = document.createElement("p");
  note.className = "note";
  note.textContent = `Luck: each roll's best play at ${analysis.luck_ply}-ply minus the average over the 21 rolls `
    + "(cubeless, per unit cube; the opening roll not counted). The graph: cubeless equity after each decision.";
  panel.appendChild(note);
}

// The review step of the decision at timeline index `index` (a cube decision: the play before it).
function reviewStepAt(index) {
  const steps = state.result.analysis.review || [];
  let found = null;
  steps.forEach((step, i) => { if (step.index <= index) found = i; });
  return found === null && steps.length ? 0 : found;
}

// The equity graph: each side's cubeless equity after every decision (yours solid, the bot's dashed,
// its mirror image), with a mark at every error coloured by GNU Backgammon's grade.
function equityGraph(timeline) {
  const NS = "http://www.w3.org/2000/svg";
  const width = 640, height = 200, left = 40, right = 10, top = 10, bottom = 24;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("id", "equity-graph");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "equity after each decision");
  const add = (name, attributes, text) => {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.appendChild(node);
    return node;
  };
  const span = Math.max(1, ...timeline.map((p) => Math.abs(p.equity)));
  const x = (i) => left + (timeline.length > 1 ? i * (width - left - right) / (timeline.length - 1) : 0);
  const y = (e) => top + (span - e) * (height - top - bottom) / (2 * span);
  add("rect", {x: left, y: top, width: width - left - right, height: height - top - bottom, fill: "#fffdf7", stroke: "#d5c9b3"});
  for (const e of [span, 0, -span]) {
    add("line", {x1: left, x2: width - right, y1: y(e), y2: y(e), stroke: "#d5c9b3", "stroke-dasharray": e ? "3 3" : ""});
    add("text", {x: left - 4, y: y(e) + 4, "text-anchor": "end", class: "graph-label"}, (e > 0 ? "+" : "") + e.toFixed(1));
  }
  add("text", {x: left, y: height - 6, class: "graph-label"}, "decisions ->");
  add("text", {x: width - right, y: height - 6, "text-anchor": "end", class: "graph-label"},
    `${state.names.you}: solid, ${state.names.bot}: dashed`);
  const path = (sign) => timeline.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(sign * p.equity).toFixed(1)}`).join(" ");
  add("path", {d: path(1), fill: "none", stroke: "#2c5a3b", "stroke-width": 2.5, class: "equity-you"});
  add("path", {d: path(-1), fill: "none", stroke: "#2b2523", "stroke-width": 1.5, "stroke-dasharray": "5 4", class: "equity-bot"});
  const colours = {doubtful: "#e0a800", bad: "#e06000", "very bad": "#c0180c"};
  timeline.forEach((p, i) => {
    if (!p.mark) return;
    const sign = p.seat === 0 ? 1 : -1;
    const mark = add("circle", {cx: x(i), cy: y(sign * p.equity), r: 5, fill: colours[p.mark], stroke: "#000",
      class: `error-mark ${p.seat === 0 ? "you" : "bot"}`, "data-index": p.index});
    const tip = document.createElementNS(NS, "title");
    tip.textContent = `${p.seat === 0 ? state.names.you : state.names.bot}: ${p.text} loses ${p.loss.toFixed(3)} (${p.mark})`;
    mark.appendChild(tip);
    mark.onclick = () => { const step = reviewStepAt(p.index); if (step !== null) openReview(step); };
  });
  return svg;
}

// --- review: the finished game, play by play --------------------------------------------------

let review = null;  // {step, show: "before" | "played" | "best"}

function openReview(step) {
  review = {step, show: "played"};
  $("review").hidden = false;
  drawReview();
}

function closeReview() {
  review = null;
  $("review").hidden = true;
  document.body.dataset.review = "no";
  if (state) { board.botDice = null; board.show(state); render(); }
}

function drawReview() {
  const steps = state.result.analysis.review;
  review.step = Math.max(0, Math.min(steps.length - 1, review.step));
  const step = steps[review.step];
  const shown = {before: step.before, played: step.after, best: step.best_after}[review.show];
  const mine = step.who === "you";
  board.botDice = mine ? null : step.dice;
  board.state = {...state, phase: "review", board: shown, dice: mine ? step.dice : null,
    dice_left: review.show === "before" ? step.dice : [], turn: step.who, destinations: {}};
  board.selected = null;
  board.draw();
  $("pips").textContent = `pips: you ${shown.pips.you}, bot ${shown.pips.bot}`;
  const loss = step.loss > 0 ? ` - loses ${step.loss.toFixed(3)}${step.mark ? ` (${step.mark})` : ""}` : "";
  const luck = step.luck === null ? "opening roll" : `luck ${fmt(step.luck)}${step.luck_mark ? ` (${step.luck_mark})` : ""}`;
  $("review-text").textContent = `Play ${review.step + 1} of ${steps.length}: ${step.name} rolled ${step.dice.join("-")}, `
    + `played ${step.played || "(no move)"}` + (step.best_is_played ? " (the best play)" : `; best ${step.best}${loss}`)
    + `; ${luck}. Showing the board ${review.show === "before" ? "before the play" : review.show === "best" ? "after the best play" : "after the play"}.`;
  for (const name of ["before", "played", "best"]) $(`review-${name}`).classList.toggle("on", review.show === name);
  document.body.dataset.review = String(review.step);
}

$("review-previous").onclick = () => { review.step -= 1; drawReview(); };
$("review-next").onclick = () => { review.step += 1; drawReview(); };
$("review-before").onclick = () => { review.show = "before"; drawReview(); };
$("review-played").onclick = () => { review.show = "played"; drawReview(); };
$("review-best").onclick = () => { review.show = "best"; drawReview(); };
$("review-close").onclick = closeReview;

function showHint(hint) {
  const panel = $("hint-panel");
  panel.innerHTML = "";
  const table = document.createElement("table");
  const head = (cells) => { const tr = document.createElement("tr"); for (const c of cells) { const th = document.createElement("th"); th.textContent = c; tr.appendChild(th); } table.appendChild(tr); };
  const row = (cells) => { const tr = document.createElement("tr"); for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); } table.appendChild(tr); };
  if (hint.kind === "plays") {
    head(["#", "play", "ply", "win", "gammon", "bg", "lose", "gammon", "bg", "equity", "diff"]);
    for (const m of hint.plays)
      row([m.rank, m.play, m.ply, pct(m.win), pct(m.win_gammon), pct(m.win_backgammon), pct(m.lose),
        pct(m.lose_gammon), pct(m.lose_backgammon), fmt(m.equity), m.rank === 1 ? "" : fmt(m.difference)]);
  } else if (hint.kind === "cube") {
    head(["", "equity"]);
    row(["No double", fmt(hint.no_double)]);
    row(["Double, take", fmt(hint.double_take)]);
    row(["Double, pass", fmt(hint.double_pass)]);
    row(["Proper cube action", hint.action]);
  } else {
    head(["", "equity"]);
    row(["Take", fmt(hint.take_equity)]);
    row(["Pass", fmt(hint.pass_equity)]);
    row(["Proper action", hint.action]);
  }
  panel.appendChild(table);
}

function showTutor(event) {
  const panel = $("tutor-panel");
  panel.hidden = false;
  $("tutor-text").textContent = event.text;
  setStatus("the tutor holds this back: do it anyway, or think again", false);
}

$("roll").onclick = () => send({action: "roll"});
$("double").onclick = () => send({action: "double"});
$("take").onclick = () => send({action: "take"});
$("pass").onclick = () => send({action: "pass"});
$("undo").onclick = () => send({action: "undo"});
$("confirm").onclick = () => send({action: "confirm"});
$("hint").onclick = () => send({action: "hint"});
$("next").onclick = () => send({action: "next_game"});
$("resign").onclick = () => send({action: "resign", level: $("resign-level").value});
$("tutor-anyway").onclick = () => { $("tutor-panel").hidden = true; send({...lastTutored, force: true}); };
$("tutor-back").onclick = () => { $("tutor-panel").hidden = true; };
$("rings").onchange = () => { board.showRings = $("rings").checked; board.draw(); };
$("tutor").onchange = () => send({action: "settings", changes: {tutor: $("tutor").checked}});
$("threshold").onchange = () => send({action: "settings", changes: {tutor_threshold: Number($("threshold").value)}});
$("forced").onchange = () => send({action: "settings", changes: {auto_play_forced: $("forced").checked}});
$("clock-seconds").onchange = () => {
  const v = $("clock-seconds").value.trim();
  send({action: "settings", changes: {clock_seconds: v ? Number(v) : null}});
};
$("clock-action").onchange = () => send({action: "settings", changes: {clock_action: $("clock-action").value}});
$("clock-cube").onchange = () => send({action: "settings", changes: {clock_cube: $("clock-cube").checked}});
$("position-start").onclick = () => send({action: "position", position: $("position").value.trim()});
$("position").onkeydown = (event) => { if (event.key === "Enter") { event.stopPropagation(); $("position-start").click(); } };

// Keyboard play: the common actions by one key (a key does what its enabled button does).
const KEYS = {r: "roll", d: "double", t: "take", p: "pass", u: "undo", backspace: "undo", enter: "confirm",
  c: "confirm", h: "hint", n: "next"};
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest("input, select, textarea")) return;
  const key = event.key.toLowerCase();
  if (review) {
    if (key === "arrowleft") $("review-previous").click();
    else if (key === "arrowright") $("review-next").click();
    else if (key === "escape") closeReview();
    else return;
    event.preventDefault();
    return;
  }
  if (key === "escape" && !$("tutor-panel").hidden) { $("tutor-back").click(); event.preventDefault(); return; }
  const button = KEYS[key] && $(KEYS[key]);
  if (!button) return;
  event.preventDefault();  // Enter on a focused button must not press it a second time
  if (!button.disabled) button.click();
});

connect();
