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
  for (const event of update.events) {
    if (event.type === "step") {
      board.draw(event.board);
      await sleep(event.who === "bot" ? 420 : 200);
    } else if (event.type === "roll" && event.who === "bot") {
      board.botDice = event.dice;
      board.draw(board.lastBoard);
      log(`${state ? state.names.bot : "bot"} rolls ${event.dice.join("-")}`);
      await sleep(350);
    } else if (event.type === "opening") {
      log(`opening roll: you ${event.you}, bot ${event.bot}` + (event.you === event.bot ? " (tie: roll again)" : ""));
      // The side with the higher die plays both: the bot's opening dice stay shown on its side.
      board.botDice = event.bot > event.you ? [event.bot, event.you] : null;
    } else if (event.type === "played") {
      log(`${event.who === "you" ? "you play" : "bot plays"} ${event.dice.join("")}: ${event.play}`);
    } else if (event.type === "double") {
      log(`${event.who === "you" ? "you double" : "bot doubles"} to ${event.value}`);
    } else if (event.type === "take" || event.type === "pass") {
      log(event.text || `you ${event.type}`);
    } else if (event.type === "tutor") {
      showTutor(event);
    } else if (event.type === "game_over") {
      log(`${event.winner === "you" ? "you win" : "bot wins"} ${event.points} point(s) (${event.how})`);
    } else if (event.type === "message" || event.type === "resign") {
      log(event.text || `you offer to resign (${event.level})`);
    }
  }
  state = update.state;
  if (state.turn === "you" && state.dice) board.botDice = null;
  board.lastBoard = state.board;
  board.show(state);
  render();
}

function log(text) {
  const line = document.createElement("div");
  line.textContent = text;
  $("log").prepend(line);
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
  $("score").textContent = s.score.length
    ? `${names.you} ${s.score.you} - ${s.score.bot} ${names.bot}  (match to ${s.score.length}${s.score.crawford ? ", Crawford game" : ""})`
    : `${names.you} ${s.score.you} - ${s.score.bot} ${names.bot}  (money${s.settings.jacoby && s.cube.used ? ", Jacoby" : ""})`;
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
  clockDeadline = s.clock ? performance.now() + 1000 * s.clock.seconds_left : null;
  tickClock();
  renderRecord();
  renderResult();
  $("hint-panel").innerHTML = "";
}

function tickClock() {
  const clock = $("clock");
  if (clockDeadline === null) {
    clock.textContent = state && state.settings.clock_seconds ? `clock: ${state.settings.clock_seconds} s per move` : "clock off";
    clock.className = "";
    return;
  }
  const left = Math.max(0, (clockDeadline - performance.now()) / 1000);
  const action = state.settings.clock_action === "lose" ? "the game is lost" : "the best play is made for you";
  clock.textContent = `${left.toFixed(0)} s left (at zero ${action})`;
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
  const title = document.createElement("h3");
  title.textContent = `${result.winner === "you" ? "You win" : "The bot wins"} ${result.points} point(s)`
    + (result.match_over ? " and the match" : "") + ` - analysis at ${result.analysis.ply}-ply`;
  panel.appendChild(title);
  for (const side of result.analysis.sides) {
    const p = document.createElement("p");
    const m = side.marks;
    p.textContent = `${side.name}: error rate ${side.error_rate.toFixed(1)} (thousandths per decision, ${side.decisions} decisions), `
      + `${m["very bad"]} very bad, ${m.bad} bad, ${m.doubtful} doubtful`;
    panel.appendChild(p);
    const list = document.createElement("ul");
    for (const mistake of side.mistakes) {
      const li = document.createElement("li");
      li.textContent = `${mistake.text}: loses ${mistake.loss.toFixed(3)} (${mistake.mark}) - ${mistake.position_id}:${mistake.match_id}`;
      list.appendChild(li);
    }
    panel.appendChild(list);
  }
}

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

connect();
