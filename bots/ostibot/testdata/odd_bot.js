// Test fixture: no shop(), and a play() whose answer depends on the turn, to
// exercise how the harness copes with odd return values.
script = {
    play: function (input) {
        switch (input.gameState.turn) {
            case 1: return undefined; // nothing: no actions
            case 2: return [{ adventurerId: 'a1', move: { direction: 'UP' } }]; // an array, not an object
            case 3: return { seq: 999, actions: [] }; // tries to set its own seq
            case 4: return { actions: [], state: { blob: 'x'.repeat(1100000) } }; // state over 1 MiB
            case 5: return { actions: [], state: 10n }; // BigInt: JSON cannot encode it
            case 6: for (;;) {} // never returns
            default: return { actions: [], state: { turn: input.gameState.turn } };
        }
    },
};
