use serde::{Deserialize, Serialize};

use crate::replay::{FORMAT_VERSION, Footer, Header, frame};
use crate::{AnyGame, BotReply, Deadlines, GameKind, GameRng, PlayerOutcome, Seat, SetupError};

/// Everything that decides a match besides the bots' replies. It is the replay header,
/// so a replay alone is enough to re-simulate its match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSetup {
    /// The game.
    pub game: GameKind,
    /// The game's rules, in full (see [`AnyGame::resolve_rules`]).
    pub rules: serde_json::Value,
    /// The map file's text, for games with maps.
    pub map: Option<String>,
    /// The match seed: the rules' randomness and the bots' `FARM_SEED`.
    pub seed: u64,
    /// The players' names, one per seat.
    pub players: Vec<String>,
}

impl MatchSetup {
    /// A setup with the rules resolved against the game's defaults and, when `map`
    /// is `None`, the game's default map for `seed`.
    pub fn new(
        game: GameKind,
        rule_overrides: &serde_json::Value,
        map: Option<String>,
        seed: u64,
        players: Vec<String>,
    ) -> Result<Self, SetupError> {
        let rules = AnyGame::resolve_rules(game, rule_overrides)?;
        let map = match map {
            Some(text) => Some(text),
            None => AnyGame::default_map(game, &rules, seed)?,
        };
        Ok(MatchSetup { game, rules, map, seed, players })
    }
}

/// A runner handed the engine replies that do not fit the step: a bug in the caller,
/// never a bot's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The match has already ended.
    #[error("the match is over")]
    Over,
    /// The replies are not exactly one per seat asked.
    #[error("expected replies from seats {expected:?}, got {given:?}")]
    WrongSeats {
        /// The seats [`Match::requests`] asked.
        expected: Vec<Seat>,
        /// The seats that replies were given for.
        given: Vec<Seat>,
    },
}

/// One match in progress: it hands out requests, takes replies and writes the replay,
/// one line per step.
#[derive(Debug, Clone)]
pub struct Match {
    setup: MatchSetup,
    game: AnyGame,
    rng: GameRng,
    deadlines: Deadlines,
    steps: u64,
    /// The last frame's line, its buffer reused from step to step.
    frame: Vec<u8>,
}

impl Match {
    /// Starts a match.
    pub fn new(setup: MatchSetup) -> Result<Self, SetupError> {
        let game = AnyGame::new(setup.game, &setup.rules, setup.map.as_deref(), &setup.players, setup.seed)?;
        let deadlines = AnyGame::deadlines(setup.game, &setup.rules)?;
        let rng = GameRng::new(setup.seed, GameRng::RULES);
        Ok(Match { setup, game, rng, deadlines, steps: 0, frame: Vec::new() })
    }

    /// The setup this match was started with.
    pub fn setup(&self) -> &MatchSetup {
        &self.setup
    }

    /// The game being played.
    pub fn game(&self) -> &AnyGame {
        &self.game
    }

    /// The reply deadlines of this match's rules.
    pub fn deadlines(&self) -> Deadlines {
        self.deadlines
    }

    /// Steps played so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether the match has ended.
    pub fn is_over(&self) -> bool {
        self.game.is_over()
    }

    /// The first replay line: the setup and the state before step 1, so it is taken
    /// before the first [`Match::submit`] (after it, the state would be a later one).
    pub fn header_line(&self) -> String {
        debug_assert_eq!(self.steps, 0, "the header holds the state before step 1");
        Header::line(FORMAT_VERSION, &self.setup, Some(&self.game.snapshot()))
    }

    /// The seats to ask this step, in seat order. May be empty while the match goes on
    /// (a step the rules play alone); call [`Match::submit`] with no replies then.
    pub fn to_act(&self) -> Vec<Seat> {
        self.game.to_act()
    }

    /// What `seat` is sent this step (see [`Game::write_observation`](crate::Game::write_observation)).
    pub fn observation(&self, seat: Seat) -> String {
        self.game.observation(seat)
    }

    /// What to send to whom this step: [`Match::observation`] for each seat of
    /// [`Match::to_act`].
    pub fn requests(&self) -> Vec<(Seat, String)> {
        self.to_act().into_iter().map(|seat| (seat, self.observation(seat))).collect()
    }

    /// Plays one step with one reply per seat of [`Match::to_act`] and returns its
    /// replay line, which lives until the next step.
    pub fn submit(&mut self, mut replies: Vec<(Seat, BotReply)>) -> Result<&str, StepError> {
        if self.game.is_over() {
            return Err(StepError::Over);
        }
        replies.sort_by_key(|(seat, _)| *seat);
        let expected = self.game.to_act();
        if !expected.iter().copied().eq(replies.iter().map(|(seat, _)| *seat)) {
            return Err(StepError::WrongSeats { expected, given: replies.iter().map(|(seat, _)| *seat).collect() });
        }
        self.game.step(&replies, &mut self.rng);
        self.steps += 1;
        self.frame.clear();
        frame::write(&mut self.frame, self.steps, &replies, |out| self.game.write_state(out));
        Ok(frame::text(&self.frame))
    }

    /// Every seat's score, rank and status.
    pub fn outcome(&self) -> Vec<PlayerOutcome> {
        self.game.outcome()
    }

    /// The last replay line.
    pub fn footer_line(&self) -> String {
        Footer { steps: self.steps, outcome: self.outcome() }.line()
    }
}
