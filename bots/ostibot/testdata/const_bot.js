// Test fixture: `const script` at top level (not a property of the global object)
// and methods that call each other through `this`.
const WEAPON = 'rusty_sword';
let shopCount = 0;

const script = {
    pick(adventurers) {
        return adventurers[0].id;
    },
    shop(input) {
        shopCount += 1;
        return { actions: [{ buy: { adventurerId: this.pick(input.adventurers), itemType: WEAPON, equip: true } }], state: { shopCount } };
    },
    play(input) {
        return { actions: [], state: { kind: 'const', turn: input.gameState.turn } };
    },
};
