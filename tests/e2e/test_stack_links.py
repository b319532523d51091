"""A stack file that resolves outside the repository is refused, at file:1:1.

git versions a symbolic link, not what it points to: a stack file linked to a
file outside the repository (or a stack directory, or one of its parents,
linked outside) lets the declaration change with no change in git, while the
plan names a clean commit and CI's refusal of uncommitted configuration does
not fire. A link that stays inside the repository is fine: its target is
versioned too. Each refusal test failed on the binary before the fix (the plan
went ahead, "Config: commit ..." with no uncommitted changes).
"""
import os
import subprocess

from harness import VX_BIN, FakeTestCase, job_yaml

WHY = ("git versions only the link, so the declaration could change with no change in git "
       "while the plan names a clean commit; copy the file into the repository instead of "
       "linking to it")


def outside_line(path, target, root):
    return ("%s:1:1: this stack file resolves to %s, outside the repository %s: %s"
            % (path, os.path.realpath(target), os.path.realpath(root), WHY))


class StackLinks(FakeTestCase):

    def outside(self, *parts):
        """A directory next to the repository, not in it."""
        path = os.path.join(self.tmp, "outside", *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def commit_all(self):
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "links")

    def refused(self, r, stack, lines):
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "", r)
        self.assertEqual(r.err.splitlines(), lines + [
            "vx: %s: the stack has %d error%s" % (stack, len(lines), "s" if len(lines) > 1 else "")],
            r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)

    def test_file_linked_out_of_the_repository_is_refused(self):
        self.repo.write({"a": job_yaml("a")})
        target = os.path.join(self.outside(), "more.yaml")
        with open(target, "w") as f:
            f.write(job_yaml("m"))
        link = os.path.join(self.repo.dir, "more.yaml")
        os.symlink(target, link)
        self.commit_all()
        self.assertEqual(self.repo.git("status", "--porcelain"), "")
        want = [outside_line(link, target, self.repo.root)]
        self.refused(self.repo.plan(env={"CI": ""}), self.repo.dir, want)
        self.refused(self.repo.apply(env={"CI": "true"}), self.repo.dir, want)
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual((r.code, r.out, r.err.splitlines()), (1, "", want), r)
        self.assertEqual(self.repo.git("branch", "--list", "vx/state/*"), "")

    def test_stack_directory_linked_out_of_the_repository_is_refused(self):
        elsewhere = self.outside("stack")
        self.repo.write({"a": job_yaml("a")})
        for name in ("jobs.yaml", "stack.yaml"):
            os.rename(os.path.join(self.repo.dir, name), os.path.join(elsewhere, name))
        os.rmdir(self.repo.dir)
        os.symlink(elsewhere, self.repo.dir)
        self.commit_all()
        self.refused(self.repo.plan(env={"CI": ""}), self.repo.dir, [
            outside_line(os.path.join(self.repo.dir, name), os.path.join(elsewhere, name),
                         self.repo.root) for name in ("jobs.yaml", "stack.yaml")])

    def test_parent_directory_linked_out_of_the_repository_is_refused(self):
        # config -> ../outside/config, and the stack is config/stack: the
        # outside directory is even a repository of its own, clean, so the
        # link cannot be mistaken for that repository's work tree.
        elsewhere = self.outside("config")
        os.makedirs(os.path.join(elsewhere, "stack"))
        self.repo.write({"a": job_yaml("a")})
        for name in ("jobs.yaml", "stack.yaml"):
            os.rename(os.path.join(self.repo.dir, name), os.path.join(elsewhere, "stack", name))
        subprocess.run(["git", "init", "-q", "-b", "main", elsewhere], check=True)
        subprocess.run(["git", "-C", elsewhere, "add", "-A"], check=True)
        subprocess.run(["git", "-C", elsewhere, "-c", "user.name=o", "-c", "user.email=o@example.com",
                        "commit", "-q", "-m", "outside"], check=True)
        os.symlink(elsewhere, os.path.join(self.repo.root, "config"))
        self.commit_all()
        stack = os.path.join(self.repo.root, "config", "stack")
        r = self.repo.vx("plan", stack, env={"CI": ""})
        self.refused(r, stack, [outside_line(os.path.join(stack, name),
                                      os.path.join(elsewhere, "stack", name), self.repo.root)
                         for name in ("jobs.yaml", "stack.yaml")])

    def test_links_inside_the_repository_are_read(self):
        # stack/jobs.yaml -> ../common/jobs.yaml, and alias -> stack: git
        # versions the targets, so the plan is of a clean commit.
        self.repo.write({"a": job_yaml("a")})
        common = os.path.join(self.repo.root, "common")
        os.makedirs(common)
        os.rename(os.path.join(self.repo.dir, "jobs.yaml"), os.path.join(common, "jobs.yaml"))
        os.symlink(os.path.join("..", "common", "jobs.yaml"), os.path.join(self.repo.dir, "jobs.yaml"))
        os.symlink("stack", os.path.join(self.repo.root, "alias"))
        self.commit_all()
        head = self.repo.git("rev-parse", "HEAD").strip()
        for stack in (self.repo.dir, os.path.join(self.repo.root, "alias")):
            r = self.repo.vx("plan", stack, env={"CI": ""})
            self.assertEqual(r.code, 0, r)
            self.assertEqual(r.out.splitlines()[2], "Config: commit %s" % head[:12], r)
        r = self.repo.apply(env={"CI": "true"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual([j["labels"]["vx-job"] for j in self.live_jobs()], ["a"])

    def test_no_repository_confines_to_the_stack_directory(self):
        top = os.path.join(self.tmp, "plain")
        stack = os.path.join(top, "stack")
        os.makedirs(stack)
        with open(os.path.join(top, "jobs.yaml"), "w") as f:
            f.write(job_yaml("a"))
        self.repo.write({})
        with open(os.path.join(self.repo.dir, "stack.yaml")) as f, \
                open(os.path.join(stack, "stack.yaml"), "w") as g:
            g.write(f.read())
        os.symlink(os.path.join("..", "jobs.yaml"), os.path.join(stack, "jobs.yaml"))
        cp = subprocess.run([VX_BIN, "validate", stack], capture_output=True, text=True,
                            cwd=top, env=self.fake.env(), timeout=60)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr.splitlines()), (1, "", [
            "%s:1:1: this stack file resolves to %s, outside the stack directory %s, and no git "
            "repository holds the stack; copy the file into the stack directory instead of "
            "linking to it" % (os.path.join(stack, "jobs.yaml"),
                               os.path.realpath(os.path.join(top, "jobs.yaml")),
                               os.path.realpath(stack))]), cp)
