// Test fixture: async methods; the harness awaits the promises they return.
var script = {
    async shop(input) {
        return { actions: [], state: { kind: 'async-shop', round: input.round } };
    },
    play(input) {
        return new Promise(function (resolve, reject) {
            setTimeout(function () {
                if (input.gameState.turn === 13) reject(new Error('async boom'));
                else resolve({ actions: [], state: { kind: 'async-play', turn: input.gameState.turn } });
            }, 50);
        });
    },
};
