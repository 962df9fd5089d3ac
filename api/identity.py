"""Who the caller is to the service: GET /me.

Who the caller is to the service: the role its token carries (the desk shows the croupier's panel only to a
role that may command)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from api import auth
from api.schemas import RoleSchema

blp = Blueprint("identity", __name__, description="The caller's role.")


@blp.route("/me")
class Me(MethodView):
    @blp.response(200, RoleSchema)
    def get(self) -> Any:
        """The role of the token sent: `operator` (commands and every query), `auditor` (queries only), or
        `open` when the service has no tokens (it then listens on loopback only, and every request may do
        everything).

        Any token the service knows may ask; the answer names the role, never the token.
        """
        return {"role": auth.current_role()}
