// Test fixture: a syntax error, so the script never loads.
var script = { play(input) { return { actions: [] } ;
