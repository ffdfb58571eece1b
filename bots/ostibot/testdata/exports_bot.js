// Test fixture: the script exported CommonJS style, as "exports a script object" may mean.
function play(input) {
    return { actions: [], state: { kind: 'exports', turn: input.gameState.turn } };
}
module.exports = { play: play };
