"""What every kind's analysis shares: the published interval and its bootstrap (`stats`), the
sequential design (`sequential`), planning from a pilot (`planning`), report.md's free text
(`mdtext`) and report.html's builder (`html`). Each kind's own analysis lives in its package
(`kinds/<kind>/analysis/`); nothing here names a kind.
"""
