// Test fixture: a player script in the original style (`var script = {...}`).
// It echoes what the harness gives it and draws from Math.random, so the tests
// can check the plumbing: seq, state, console.log on stderr, seeded randomness,
// a throwing play() (turn 13) and objects of the script's own realm.
var calls = 0; // module-level variables live as long as the process (one match)

var script = {
    shop: function (input) {
        calls++;
        console.log('shop called for round', input.round);
        return {
            actions: [{ buy: { adventurerId: input.adventurers[0].id, itemType: 'rusty_sword', equip: true } }],
            state: { from: 'shop', previous: input.state, calls: calls },
        };
    },
    play: function (input) {
        calls++;
        if (input.gameState.turn === 13) throw new Error('boom at turn 13');
        console.log('play called for turn', input.gameState.turn);
        console.error('an error line also goes to stderr');
        var own = input.gameState.entities.filter(function (e) { return e.type === 'adventurer' && e.team === input.you; });
        return {
            actions: own.map(function (a) { return { adventurerId: a.id, move: { direction: 'RIGHT', reason: 'echo' } }; }),
            error: null,
            state: {
                from: 'play',
                previous: input.state,
                calls: calls,
                random: [Math.random(), Math.random(), Math.random()],
                sameRealm: input instanceof Object && Array.isArray(input.gameState.map),
            },
        };
    },
};
