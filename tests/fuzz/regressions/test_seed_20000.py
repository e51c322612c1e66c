"""Found by `python -m dycl.fuzz` (seed 20000), shrunk: hcfg-mismatch.

leaf 1: shape [1, 5] vs [1, 3] (early return inside a for loop nested in a while loop is lost; not shrunk: the shrinker timed out under load)

Source of the shrunk program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Fuzz20000(nn.Module):
        def __init__(self):
            super().__init__()
            self.m0 = nn.Linear(6, 6)
            self.m1 = nn.Linear(6, 5)
            self.m2 = nn.Linear(6, 6)
            self.m3 = nn.Linear(6, 6)
            self.m4 = nn.Linear(6, 6)
            self.m5 = nn.Linear(6, 6)
            self.m6 = nn.Linear(6, 6)
            self.m7 = nn.Linear(6, 6)
            self.m8 = nn.Linear(6, 6)
            self.m9 = nn.Linear(6, 6)
            self.m10 = nn.Linear(6, 6)
            self.m11 = nn.Linear(6, 3)

        def forward(self, x):
            count = 0
            x = x * 0.5 + 1.0
            x = x * -1.0 + 0.1
            steps1 = 0
            while steps1 < 1 and F.softmax(x, -1).max().item() > 0.4084:
                for _ in range(3):
                    if x.abs().mean() < 1.374:
                        x = F.gelu(self.m0(x))
                        return self.m1(x), count
                x = x + F.silu(self.m2(x))
                if x.max() < 1.345:
                    break
                steps1 += 1
            x = self.m3(x)
            if bool(x.mean() > 0.2529):
                if x.max() > 1.896:
                    x = x + F.leaky_relu(self.m4(x), 0.1)
                    count += 2
                elif x.abs().mean() > 1.4567671120166779:
                    x = self.m5(x)
                    x = torch.tanh(self.m6(x))
                    x = F.gelu(self.m7(x))
                else:
                    x = F.elu(self.m8(x))
                    count += 1
                    x = F.silu(self.m9(x))
                x = self.m10(x)
            return self.m11(x), count"""

from dycl.fuzz.program import Break, Cond, For, If, Line, Program, While  # noqa: F401

PROGRAM = Program(seed=20000, input_shape=(1, 6), modules={'m0': 'nn.Linear(6, 6)', 'm1': 'nn.Linear(6, 5)', 'm2': 'nn.Linear(6, 6)', 'm3': 'nn.Linear(6, 6)', 'm4': 'nn.Linear(6, 6)', 'm5': 'nn.Linear(6, 6)', 'm6': 'nn.Linear(6, 6)', 'm7': 'nn.Linear(6, 6)', 'm8': 'nn.Linear(6, 6)', 'm9': 'nn.Linear(6, 6)', 'm10': 'nn.Linear(6, 6)', 'm11': 'nn.Linear(6, 3)'}, helpers={}, prologue=['count = 0'], body=[Line(text='x = x * 0.5 + 1.0'), Line(text='x = x * -1.0 + 0.1'), While(trips=1, cond=Cond(stat='F.softmax(x, -1).max()', index=2, op='>', form='item', via_attr=False), body=[For(trips=3, body=[If(branches=[(Cond(stat='x.abs().mean()', index=0, op='<', form='tensor', via_attr=False), [Line(text='x = F.gelu(self.m0(x))'), Line(text='return self.m1(x), count')])], orelse=None)]), Line(text='x = x + F.silu(self.m2(x))'), Break(cond=Cond(stat='x.max()', index=1, op='<', form='tensor', via_attr=False))], counter='steps1'), Line(text='x = self.m3(x)'), If(branches=[(Cond(stat='x.mean()', index=3, op='>', form='bool', via_attr=False), [If(branches=[(Cond(stat='x.max()', index=4, op='>', form='tensor', via_attr=False), [Line(text='x = x + F.leaky_relu(self.m4(x), 0.1)'), Line(text='count += 2')]), (Cond(stat='x.abs().mean()', index=5, op='>', form='tensor', via_attr=False), [Line(text='x = self.m5(x)'), Line(text='x = torch.tanh(self.m6(x))'), Line(text='x = F.gelu(self.m7(x))')])], orelse=[Line(text='x = F.elu(self.m8(x))'), Line(text='count += 1'), Line(text='x = F.silu(self.m9(x))')]), Line(text='x = self.m10(x)')])], orelse=None)], epilogue=['return self.m11(x), count'], thresholds=[1.374, 1.345, 0.4084, 0.2529, 1.896, 1.4567671120166779])


def test_seed_20000_matches_eager():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
