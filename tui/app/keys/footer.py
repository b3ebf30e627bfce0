"""The footer: Textual's, but a key label that does not fit whole is left out, never cut
mid-word ("tab Are…"). The keys come in the key table's order, most needed first (help and
quit lead), so what is dropped at a narrow width is the least needed; the help lists them all."""

from __future__ import annotations

from textual.events import Resize
from textual.widgets import Footer

from dflash_tui.app.widgets.removal import let_go_of_lines

KEY = "FooterKey"  # Textual's key widget, by its CSS type name (its module is private)
PALETTE = "-command-palette"  # the palette's key, docked at the right


class KeyFooter(Footer):
    async def recompose(self) -> None:
        """The keys are made again whenever the bindings change: fit them once laid out."""
        # The keys are removed and made again: their drawn lines go (tui/app/widgets/removal.py).
        let_go_of_lines(self)
        await super().recompose()
        # Textual binds each new key's ``compact`` to the footer's (``data_bind``), a watcher
        # kept on the footer until ``compact`` next changes, which it never does here: every
        # key of every earlier recompose (a few each run, as the run keys come and go) stayed
        # reachable. Invoking the footer's watchers once (same value) drops those of the
        # removed keys.
        self.mutate_reactive(Footer.compact)
        self.call_after_refresh(self.fit)

    def on_resize(self, event: Resize) -> None:
        for key in self.query(KEY):  # all back, laid out at the new width, then fitted
            key.display = True
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Hide every key from the first one that would run under the palette's key or past
        the right edge (a key's region is its whole label, unclipped)."""
        keys = list(self.query(KEY))
        docked = [k for k in keys if k.has_class(PALETTE)]
        limit = docked[0].region.x if docked else self.region.right
        cut = False
        for key in keys:
            if key.has_class(PALETTE):
                continue
            cut = cut or key.region.right > limit
            key.display = not cut
