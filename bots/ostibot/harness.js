#!/usr/bin/env node
/*
 * Ostibot harness for matchfarm: runs an UNCHANGED Ostibot player script on the
 * farm's stdio protocol.
 *
 *   node harness.js path/to/bot.js
 *
 * The player file is a plain script, as on ostibot.com, that defines a global
 * `script = { shop(input), play(input) }` (with `var`, `let`, `const` or a bare
 * assignment). `module.exports = script`, `module.exports.script = script` and
 * `exports.script = script` work too, since the original bot "exports" it.
 *
 * Protocol (/work/shared/games/ostibot.md, "I/O JSON" and Settled questions 18-22):
 *   * The farm writes one line per call on stdin:
 *       {"call":"shop"|"play","seq":n,"input":{...}}
 *   * The harness writes exactly one line per request line on stdout: the object
 *     the script returned ({"actions":[...],"state":...,"error":...}) with
 *     "seq":n echoed first. `seq` is optional: a request without one gets a reply
 *     without one.
 *   * No actions at all (the safe reply): {"seq":n,"actions":[]} when the script
 *     has no such method or returns undefined/null; {"seq":n,"error":"..."} when
 *     it throws, times out, returns something that is not an object, or the line
 *     is not a request. Neither carries "state", so the team's state is kept.
 *   * stdout carries replies only. `console.*` of the script and the harness's
 *     own log go to stderr.
 *   * EOF on stdin ends the match: exit 0 once the pending calls have answered.
 *
 * The script's `Math.random` is a PRNG seeded from FARM_SEED and FARM_SEAT, so a
 * match replays the same way. Returned promises are awaited (async shop/play).
 *
 * Environment (all optional):
 *   FARM_SEED, FARM_SEAT         seed Math.random (decimal u64; missing or bad = 0)
 *   OSTIBOT_CALL_TIMEOUT_MS      stop a synchronous call after this many ms
 *                                (default: the input's rules.timeout seconds)
 *   OSTIBOT_LOAD_TIMEOUT_MS      stop the script's top-level code (default 10000)
 *
 * Node 18+ (Debian bookworm's nodejs in matchfarm/base-debian), no npm packages.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const vm = require('node:vm');

// The farm reads at most 1 MiB per reply line (engine/src/wire.rs, MAX_REPLY_BYTES);
// a longer line would be unreadable and the whole turn lost.
const MAX_REPLY_BYTES = 1 << 20;
// Error texts end up in the reply; the engine logs only 200 characters anyway.
const MAX_ERROR_CHARS = 1000;

function log(message) {
    process.stderr.write(`[ostibot harness] ${message}\n`);
}

function errorText(error) {
    // Errors from inside the vm context fail `instanceof Error` (another realm),
    // so look at the shape instead.
    if (error && typeof error === 'object' && typeof error.message === 'string') {
        const name = typeof error.name === 'string' ? error.name : 'Error';
        return `${name}: ${error.message}`;
    }
    try {
        return String(error);
    } catch (_) {
        return 'an unprintable value';
    }
}

/** The error's stack on the lines after the message, for the log. */
function stackOf(error) {
    return error && typeof error.stack === 'string' ? `\n${error.stack}` : '';
}

function clip(text) {
    return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}...` : text;
}

// --- seeded randomness ----------------------------------------------------------

function envU64(name) {
    const text = (process.env[name] || '').trim();
    if (!/^[0-9]+$/.test(text)) return 0n;
    const value = BigInt(text);
    return value < 1n << 64n ? value : 0n;
}

function envMillis(name) {
    const value = Number((process.env[name] || '').trim());
    return Number.isFinite(value) && value > 0 ? Math.ceil(value) : undefined;
}

/**
 * Math.random's replacement: sfc32 (fast, 32-bit state words, good statistics),
 * its 128-bit state filled by splitmix64 from seed * 1_000_003 + seat (mod 2^64),
 * the same combination the farm's other example bots use.
 */
function seededRandom(seed, seat) {
    const MASK = (1n << 64n) - 1n;
    let x = (seed * 1000003n + seat) & MASK;
    const splitmix64 = () => {
        x = (x + 0x9e3779b97f4a7c15n) & MASK;
        let z = x;
        z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
        z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
        return z ^ (z >> 31n);
    };
    const w1 = splitmix64();
    const w2 = splitmix64();
    let a = Number(w1 >> 32n) | 0;
    let b = Number(w1 & 0xffffffffn) | 0;
    let c = Number(w2 >> 32n) | 0;
    let d = Number(w2 & 0xffffffffn) | 0;
    function random() {
        const t = (((a + b) | 0) + d) | 0;
        d = (d + 1) | 0;
        a = b ^ (b >>> 9);
        b = (c + (c << 3)) | 0;
        c = (c << 21) | (c >>> 11);
        c = (c + t) | 0;
        return (t >>> 0) / 4294967296; // [0, 1), like Math.random
    }
    for (let i = 0; i < 12; i++) random(); // let the state mix before first use
    return random;
}

// --- loading the player's script -------------------------------------------------

/**
 * Builds the context the script runs in: the JavaScript built-ins of a fresh realm
 * plus console (to stderr), timers and a CommonJS-like `module`/`exports`. No
 * `require` and no `process`: a player script needs neither, and without `process`
 * it cannot write to stdout by mistake. (vm is not a security boundary; the
 * container is.)
 */
function makeContext(random) {
    const sandboxConsole = new console.Console({ stdout: process.stderr, stderr: process.stderr });
    const module = { exports: {} };
    const context = vm.createContext({
        console: sandboxConsole,
        module,
        exports: module.exports,
        setTimeout,
        clearTimeout,
        setInterval,
        clearInterval,
        setImmediate,
        clearImmediate,
        queueMicrotask,
        structuredClone,
        TextEncoder,
        TextDecoder,
    });
    vm.runInContext('Math', context).random = random;
    return context;
}

// Top-level const/let are not properties of the context object, but later scripts
// run in the same context share the global lexical scope, so this finds them too.
const FIND_SCRIPT = new vm.Script("typeof script !== 'undefined' ? script : undefined", {
    filename: 'ostibot-harness:find-script',
});

function hasMethods(value) {
    return (
        value !== null &&
        (typeof value === 'object' || typeof value === 'function') &&
        (typeof value.shop === 'function' || typeof value.play === 'function')
    );
}

/** Runs the file and returns its script object; throws when there is none. */
function loadScript(file, context) {
    const source = fs.readFileSync(file, 'utf8');
    new vm.Script(source, { filename: path.resolve(file) }).runInContext(context, {
        timeout: envMillis('OSTIBOT_LOAD_TIMEOUT_MS') || 10000,
    });
    const exported = context.module.exports;
    const candidates = [
        FIND_SCRIPT.runInContext(context),
        exported && exported.script,
        exported,
        context.exports && context.exports.script,
    ];
    const found = candidates.find(hasMethods);
    if (found) return found;
    const global = candidates[0];
    if (global !== undefined && global !== null) return global; // no methods: every call says so
    throw new Error('the file defines no `script` object (expected `script = { shop(input), play(input) }`)');
}

// --- calling it -------------------------------------------------------------------

// The call itself runs inside the context: JSON.parse there makes the input an
// object of the script's own realm (so `instanceof Object`/`Array` work), the call
// is a method call (so `this` is the script object), and the vm timeout applies.
const CALL = new vm.Script('__ostibotScript[__ostibotCall.name](JSON.parse(__ostibotCall.input))', {
    filename: 'ostibot-harness:call',
});

function hideInContext(context, key, value) {
    Object.defineProperty(context, key, { value, writable: true, configurable: true, enumerable: false });
}

/** The reply body for a script's return value (before seq is added). */
function bodyFor(name, result) {
    // Returning nothing means doing nothing, as in the original.
    if (result === undefined || result === null) return { actions: [] };
    let json;
    try {
        json = JSON.stringify(result);
    } catch (error) {
        return { error: clip(`harness: ${name} returned a value JSON cannot encode (${errorText(error)})`) };
    }
    const body = json === undefined ? undefined : JSON.parse(json);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        // The spec wants an object ({actions, state, error}); an array or a number
        // would be a wholly invalid reply. Say why instead of sending it.
        const kind = Array.isArray(body) ? 'an array' : body === undefined ? typeof result : typeof body;
        return { error: `harness: ${name} returned ${kind}, not an object like {"actions":[...]}` };
    }
    return body;
}

// --- the protocol loop --------------------------------------------------------------

function writeReply(request, body) {
    const reply = {};
    const hasSeq = request !== null && Object.prototype.hasOwnProperty.call(request, 'seq');
    if (hasSeq) reply.seq = request.seq; // first, as in the spec's examples
    Object.assign(reply, body);
    if (hasSeq) reply.seq = request.seq; // a script's own "seq" must not hide ours
    let line = JSON.stringify(reply);
    if (Buffer.byteLength(line) > MAX_REPLY_BYTES && 'state' in reply) {
        // Settled question 21: a state over the cap keeps the previous state but
        // the actions still count. Without it the farm would drop the whole line.
        log(`reply over ${MAX_REPLY_BYTES} bytes: sent without its state (the previous state is kept)`);
        delete reply.state;
        line = JSON.stringify(reply);
    }
    if (Buffer.byteLength(line) > MAX_REPLY_BYTES) {
        log(`reply over ${MAX_REPLY_BYTES} bytes even without state: replying with no actions`);
        line = JSON.stringify(hasSeq ? { seq: request.seq, error: 'harness: reply too large' } : { error: 'harness: reply too large' });
    }
    process.stdout.write(`${line}\n`);
}

/** A best-effort seq for a line that is not JSON, so the farm can still match it. */
function salvageSeq(line) {
    const match = /"seq"\s*:\s*(\d{1,15})\b/.exec(line);
    return match ? { seq: Number(match[1]) } : null;
}

function main() {
    const file = process.argv[2];
    if (!file) {
        process.stderr.write('usage: node harness.js path/to/bot.js\n');
        process.exit(2);
    }

    // A bot's timer or promise that fails outside a call must not kill the process
    // (a dead bot idles for the rest of the game).
    process.on('uncaughtException', (error) => log(`uncaught: ${errorText(error)}${stackOf(error)}`));
    process.on('unhandledRejection', (error) => log(`unhandled rejection: ${errorText(error)}`));
    // The farm stopped reading: the match is over.
    process.stdout.on('error', () => process.exit(0));

    const seed = envU64('FARM_SEED');
    const seat = envU64('FARM_SEAT');
    const context = makeContext(seededRandom(seed, seat));
    let script = null;
    let loadError = null;
    try {
        script = loadScript(file, context);
        hideInContext(context, '__ostibotScript', script);
        log(`loaded ${file} (seed ${seed}, seat ${seat})`);
    } catch (error) {
        // Keep answering: every call gets an error reply, so the farm sees why.
        loadError = clip(`harness: the script failed to load: ${errorText(error)}`);
        log(`${loadError}${stackOf(error)}`);
    }
    const callTimeout = envMillis('OSTIBOT_CALL_TIMEOUT_MS');

    let pending = 0;
    let inputClosed = false;
    const finishIfDone = () => {
        if (inputClosed && pending === 0) process.exit(0);
    };

    function handleLine(line) {
        let request;
        try {
            request = JSON.parse(line);
        } catch (error) {
            log(`bad request line (not JSON: ${errorText(error)}): ${line.slice(0, 200)}`);
            writeReply(salvageSeq(line), { error: 'harness: the request line is not JSON' });
            return;
        }
        const isObject = request !== null && typeof request === 'object' && !Array.isArray(request);
        if (!isObject) {
            log(`bad request line (not an object): ${line.slice(0, 200)}`);
            writeReply(null, { error: 'harness: the request is not a JSON object' });
            return;
        }
        const name = request.call;
        if (name !== 'shop' && name !== 'play') {
            log(`bad request: unknown call ${JSON.stringify(name)}`);
            writeReply(request, { error: 'harness: "call" must be "shop" or "play"' });
            return;
        }
        const input = request.input;
        if (input === null || typeof input !== 'object' || Array.isArray(input)) {
            log(`bad request: ${name} without an input object`);
            writeReply(request, { error: 'harness: "input" must be an object' });
            return;
        }
        if (loadError) {
            writeReply(request, { error: loadError });
            return;
        }
        if (script === null || typeof script[name] !== 'function') {
            // Seed: "If shop is not defined ... no actions are taken."
            writeReply(request, { actions: [] });
            return;
        }

        let result;
        try {
            hideInContext(context, '__ostibotCall', { name, input: JSON.stringify(input) });
            const rulesTimeout = input.rules && Number(input.rules.timeout);
            const timeout = callTimeout || (rulesTimeout > 0 ? Math.ceil(rulesTimeout * 1000) : undefined);
            result = CALL.runInContext(context, timeout ? { timeout } : {});
        } catch (error) {
            log(`${name} threw: ${errorText(error)}${stackOf(error)}`);
            writeReply(request, { error: clip(errorText(error)) });
            return;
        }

        if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
            // An async shop/play: answer when it settles. Later lines are handled
            // meanwhile; a late answer carries its own seq, so the farm can tell.
            pending++;
            Promise.resolve(result)
                .then(
                    (value) => {
                        const body = bodyFor(name, value);
                        if (typeof body.error === 'string' && body.error.startsWith('harness:')) log(body.error);
                        writeReply(request, body);
                    },
                    (error) => {
                        log(`${name} rejected: ${errorText(error)}${stackOf(error)}`);
                        writeReply(request, { error: clip(errorText(error)) });
                    },
                )
                .finally(() => {
                    pending--;
                    finishIfDone();
                });
            return;
        }
        const body = bodyFor(name, result);
        if (typeof body.error === 'string' && body.error.startsWith('harness:')) log(body.error);
        writeReply(request, body);
    }

    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    lines.on('line', (line) => {
        try {
            handleLine(line);
        } catch (error) {
            // Only a harness bug gets here; still answer the line.
            log(`harness error: ${errorText(error)}${stackOf(error)}`);
            writeReply(null, { error: 'harness: internal error' });
        }
    });
    lines.on('close', () => {
        inputClosed = true;
        finishIfDone();
    });
}

// Exported for the tests; `node harness.js bot.js` runs main().
if (require.main === module) {
    main();
} else {
    module.exports = { seededRandom, bodyFor, salvageSeq };
}
